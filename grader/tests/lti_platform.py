"""An LMS for the LTI tests: an LTI 1.3 platform built on lti1p3platform (PyPI; not this project's code), served
by uvicorn as a process of its own on loopback, as Canvas or Moodle would be to the service.

    python -m grader.tests.lti_platform CONFIG.json PORT

CONFIG.json: the platform's issuer, the tool's client id, the deployment the course installed it with, the tool's
login and launch URLs, and the people of the course (`users`: login hint -> name, email, roles, LIS sourced id).
A user "clicks the assignment" at /start?user=ID, which is the platform's third-party login initiation (to the
tool's /lti/login); the platform's authorization endpoint (/authorize) answers the tool's redirect with the
auto-submitting form that posts the signed id token to the tool. /jwks publishes its key. Grades come back through
Assignment and Grade Services: the launch names line item 1; /token gives the tool an access token for its signed
request (checked against the tool's key set, `tool_jwks_url`), /lineitems/1/scores takes its scores (the library's
score service; while POST /gradebook?down=1 holds, it answers 503), and GET /scores lists what arrived. The
course's roster is its Names and Role Provisioning Service at /memberships (every person of the config).
/start?...&deep=1 is an instructor adding an item from the tool (deep linking): the tool's signed answer comes back
to /deeplink-return, checked by the library against the tool's key set; GET /links lists what was added.

For the refusal tests a launch can be made wrong the way an attacker or a misconfigured LMS would make it:
/start?...&deployment=OTHER launches from another deployment; &tamper=forged signs with a key the platform does not
publish under the id of the one it does, unknown-key with such a key under its own id, expired issues a token that
expired two minutes ago, audience names another tool, issuer another platform, deployment another deployment (in
the token only) (each travels in the lti_message_hint, as a platform's own launch state does)."""
from __future__ import annotations

import json
import sys
from html import escape
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.ags import LtiAgs
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.nrps import LtiNrps
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as LibraryRequest
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.routing import Route

LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"


def _pem_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class Platform(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, config: dict, keys: tuple[str, str], deployment: str, kid: str | None = None,
                             **_):
        """keys: (private, public) PEM; kid: the key id its tokens name, where not the signing key's own."""
        self._registration = (Registration().set_iss(config["issuer"]).set_client_id(config["client_id"])
                              .set_deployment_id(deployment).set_oidc_login_url(config["tool_login_url"])
                              .set_launch_url(config["tool_launch_url"])
                              .set_deeplink_launch_url(config["tool_launch_url"]).set_platform_private_key(keys[0])
                              .set_platform_public_key(keys[1]))
        if kid:
            self._registration.get_kid = lambda: kid
        if config.get("tool_jwks_url"):  # the tool's keys, for its token requests (grade passback)
            self._registration.set_tool_key_set_url(config["tool_jwks_url"])

    def get_registration_by_params(self, **kwargs):
        return self._registration


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs):
        self._lti_message_hint = json.dumps(kwargs)

    def get_redirect(self, url: str):
        return RedirectResponse(url, status_code=302)


class Scores(AssignmentsGradesService):
    """The gradebook's side of Assignment and Grade Services: one line item per assignment; the scores posted to
    it are kept in memory, in the order they came (GET /scores shows them)."""

    received: list[dict] = []
    down = False  # POST /gradebook?down=1: every score is answered 503 until ?down=0

    def find_lineitems(self, **kwargs):
        return {"content": [], "has_next": False}

    def find_lineitem(self, line_item_id):
        return {"id": line_item_id, "scoreMaximum": 100, "label": "CUDA kernels"}

    def create_lineitem(self, creation_data):
        return creation_data

    def update_lineitem(self, update_data):
        return update_data

    def delete_lineitem(self, line_item_id):
        return None

    def update_score(self, line_item_id, score):
        Scores.received.append({"lineitem": line_item_id, **score})
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id, page=1, limit=None, user_id=None):
        return {"content": [], "has_next": False}


class Links:
    """The content items tools added to the course by deep linking (GET /links)."""
    added: list[dict] = []


class Members(NamesRoleProvisioningService):
    """The course's membership service: every person of the config, with the fields an LMS shares."""

    users: dict = {}

    def get_context_by_id(self):
        return Context(id="course-1", label="GPU", title="GPU programming")

    def get_member_data_page(self, page=1, limit=None, role=None, since=None):
        people = [{"user_id": uid, "roles": u["roles"], "name": u.get("name"), "email": u.get("email"),
                   "lis_person_sourcedid": u.get("sourcedid"), "status": u.get("status", "Active")}
                  for uid, u in Members.users.items()]
        return {"content": [{k: v for k, v in p.items() if v is not None} for p in people], "has_next": False}


class Launch(LTIAdvantageMessageLaunchAbstract):
    def get_preflight_response(self) -> dict:
        return dict(self._request.query_params)

    def render_launch_form(self, launch_data: dict, **kwargs):
        return HTMLResponse(
            f'<!DOCTYPE html><html><head><title>Launching</title></head><body>'
            f'<form method="POST" action="{escape(launch_data["launch_url"])}" id="form">'
            f'<input type="hidden" name="id_token" value="{escape(launch_data["id_token"])}">'
            f'<input type="hidden" name="state" value="{escape(launch_data["state"])}"></form>'
            f'<script>document.getElementById("form").submit();</script></body></html>')


def make_app(config: dict) -> Starlette:
    keys, other_keys = _pem_pair(), _pem_pair()
    Members.users = config["users"]

    def platform(deployment: str | None = None, signing=None, kid: str | None = None) -> Platform:
        return Platform(config=config, keys=signing or keys, deployment=deployment or config["deployment"], kid=kid)

    async def jwks(request: Request):
        return JSONResponse(platform().get_jwks())

    async def start(request: Request):
        user = request.query_params["user"]
        hint = {"deployment": request.query_params.get("deployment", config["deployment"]),
                "tamper": request.query_params.get("tamper", ""), "deep": request.query_params.get("deep", "")}
        login = Login(request, platform(hint["deployment"]))
        login.set_lti_message_hint(**hint)
        return login.initiate_login(user)

    async def authorize(request: Request):
        hint = json.loads(request.query_params.get("lti_message_hint", "{}"))
        tamper = hint.get("tamper", "")
        if tamper == "forged":  # another key, under the id of the platform's own
            conf = platform(hint.get("deployment"), signing=(other_keys[0], keys[1]),
                            kid=platform().get_registration().get_kid())
        elif tamper == "unknown-key":  # another key, under its own id
            conf = platform(hint.get("deployment"), signing=other_keys)
        else:
            conf = platform(hint.get("deployment"))
        launch = Launch(request, conf)
        person = config["users"][request.query_params["login_hint"]]
        launch.set_user_data(request.query_params["login_hint"], person["roles"], person.get("name"),
                             person.get("email"))
        launch.set_resource_link_claim("assignment-1", title="CUDA kernels")
        launch.set_launch_context_claim("course-1", context_title="GPU programming")
        if person.get("sourcedid"):
            launch.set_extra_claims({LIS: {"person_sourcedid": person["sourcedid"]}})
        ags = LtiAgs(f"{config['issuer']}/lineitems", f"{config['issuer']}/lineitems/1")
        launch.set_extra_claims(ags.get_lti_ags_launch_claim())
        launch.set_extra_claims(LtiNrps(f"{config['issuer']}/memberships").get_lti_nrps_launch_claim())
        if hint.get("deep"):  # the instructor picks a tool's item for the course (deep linking)
            launch.set_dl(f"{config['issuer']}/deeplink-return", title="Add an assignment",
                          accept_types={"ltiResourceLink"}, extra_data={"slot": "week-9"})
        if tamper == "expired":
            launch.set_id_token_expiration(-120)
        elif tamper == "audience":
            launch.set_extra_claims({"aud": "another-tool", "azp": "another-tool"})
        elif tamper == "issuer":
            launch.set_extra_claims({"iss": "https://another-lms.example"})
        elif tamper == "deployment":  # a token from another deployment of the same platform, its login silent
            launch.set_extra_claims({"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "deployment-9"})
        return launch.lti_launch()

    async def token(request: Request):
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        try:
            return JSONResponse(platform().get_access_token(form))
        except Exception as e:  # the library's refusals: an OAuth 2 error
            return JSONResponse({"error": "invalid_client", "error_description": f"{type(e).__name__}: {e}"}, 401)

    async def scores(request: Request):
        if Scores.down:
            return JSONResponse({"error": "the gradebook is down for maintenance"}, 503)
        service = Scores(_Metadata(_described(request, await request.json())), platform(),
                         f"{config['issuer']}/lineitems", f"{config['issuer']}/lineitems/{request.path_params['item']}")
        answer = service.handle_resp(service.handle_update_score, line_item_id=request.path_params["item"])
        return JSONResponse({"message": answer.message}, answer.code)

    async def memberships(request: Request):
        service = Members(_Metadata(_described(request, None)), platform(), f"{config['issuer']}/memberships")
        answer = service.handle_resp(service.handle_get_members)
        return JSONResponse(answer.result if answer.code == 200 else {"message": answer.message}, answer.code)

    async def deeplink_return(request: Request):
        form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
        try:
            conf = platform()
            conf.set_accepted_deeplinking_types(["ltiResourceLink"])
            items = conf.validate_deeplinking_resp({"JWT": form.get("JWT", "")})
        except Exception as e:  # the library's refusal of the tool's answer
            return HTMLResponse(f"<p id=refused>{escape(type(e).__name__)}: {escape(str(e))}</p>", 400)
        Links.added += items
        return HTMLResponse(f"<p id=added>Added {escape(', '.join(i.get('title', '') for i in items))}.</p>")

    async def links(request: Request):
        return JSONResponse(Links.added)

    async def received(request: Request):
        return JSONResponse(Scores.received)

    async def gradebook(request: Request):
        Scores.down = request.query_params.get("down") == "1"
        return JSONResponse({"down": Scores.down})

    return Starlette(routes=[Route("/jwks", jwks), Route("/start", start), Route("/authorize", authorize),
                             Route("/token", token, methods=["POST"]),
                             Route("/lineitems/{item}/scores", scores, methods=["POST"]),
                             Route("/scores", received), Route("/gradebook", gradebook, methods=["POST"]),
                             Route("/memberships", memberships),
                             Route("/deeplink-return", deeplink_return, methods=["POST"]), Route("/links", links)])


def _described(request: Request, body) -> dict:
    """A request as the library's services read it (lti1p3platform.request's metadata)."""
    return {"method": request.method, "form_data": {}, "get_data": dict(request.query_params),
            "headers": request.headers, "content_type": request.headers.get("content-type"),
            "path": request.url.path, "json": body}


class _Metadata(LibraryRequest):
    def build_metadata(self, request):
        return request


def launch_form(html: str) -> tuple[str, dict]:
    """A page's form's action and fields (what a browser would post): the platform's launch form, the tool's
    deep linking answer."""
    import re
    action = re.search(r'action="([^"]+)"', html).group(1)
    fields = dict(re.findall(r'name="([A-Za-z_]+)" value="([^"]*)"', html))
    from html import unescape
    return unescape(action), {k: unescape(v) for k, v in fields.items()}


def query_of(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


if __name__ == "__main__":
    uvicorn.run(make_app(json.loads(Path(sys.argv[1]).read_text())), host="127.0.0.1", port=int(sys.argv[2]),
                log_level="warning")
