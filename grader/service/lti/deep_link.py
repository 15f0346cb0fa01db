"""Deep linking (LTI Deep Linking 2.0): an instructor adds the assignment from the LMS's picker. The LMS launches
the tool with an LtiDeepLinkingRequest; the tool answers with one content item, a resource link to its launch URL
with a line item worth the rubric's points (so the LMS makes the gradebook column the grades go back to), signed
with the tool's key and posted back to the LMS's return URL by the instructor's click."""
from __future__ import annotations

import secrets
import time
from pathlib import Path

from grader.core.rubric import Rubric
from grader.service.lti import keys, platforms
from grader.service.lti.launch import CLAIM, DL_SETTINGS, Launch

DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/"
RESPONSE = "LtiDeepLinkingResponse"


def content_item(rubric: Rubric, launch_url: str) -> dict:
    return {"type": "ltiResourceLink", "title": rubric.title, "url": launch_url,
            "text": "Your uploads to the course's grading service and their results.",
            "lineItem": {"scoreMaximum": float(rubric.max_points), "label": rubric.title, "resourceId": rubric.name},
            "window": {"targetName": "_blank"}}


def answer(results: Path, launch: Launch, rubric: Rubric, launch_url: str) -> tuple[str, str]:
    """(the LMS's return URL, the signed response JWT) for a deep linking launch."""
    jwt = platforms.jose()
    settings = launch.claims[DL_SETTINGS]
    signing = keys.current(results)
    now = int(time.time())
    message = {"iss": launch.platform.client_id, "aud": launch.platform.issuer, "iat": now, "exp": now + 600,
               "nonce": secrets.token_urlsafe(16), CLAIM + "deployment_id": launch.claims[CLAIM + "deployment_id"],
               CLAIM + "message_type": RESPONSE, CLAIM + "version": "1.3.0",
               DL_CLAIM + "content_items": [content_item(rubric, launch_url)],
               DL_CLAIM + "msg": f"Added {rubric.title}."}
    if settings.get("data") is not None:  # the LMS's own state, given back as it came
        message[DL_CLAIM + "data"] = settings["data"]
    token = jwt.encode(message, signing.private_pem, algorithm="RS256", headers={"kid": signing.kid})
    return settings["deep_link_return_url"], token
