"""The service's HTTP app (docs/service.md): the API (grader/service/api_handlers.py), the pages
(grader/service/pages.py) and the LTI tool's addresses (grader/service/lti/handlers.py, docs/lti.md) at their
addresses, Starlette, served by uvicorn. The handlers are functions of their own modules; an app holds its
service's state (grader/service/context.py) on `app.state.service`, where they find it.
"""
from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from grader.service import api_handlers as api
from grader.service.api_handlers import Gone
from grader.service.context import ServiceConfig, ServiceContext
from grader.service.lti.handlers import lti_routes
from grader.service.pages import page_routes

# `serve` and the tests make their config where they make the app
__all__ = ["PREPARING", "ServiceConfig", "ServiceContext", "create_app"]

PREPARING = "the grading service is starting (it builds the solution first): try again in a few minutes"


class _WhilePreparing:
    """While `serve` prepares (builds the solution), every address answers 503 with one line, /healthz included,
    so a client can tell "starting" from "down"; pages get the same line as text."""

    def __init__(self, app, preparing):
        self.app, self.preparing = app, preparing

    async def __call__(self, scope, receive, send):
        doing = self.preparing() if self.preparing and scope["type"] == "http" else ""
        if not doing:
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        headers = {"Retry-After": "60"}
        if path == "/healthz" or path.startswith("/api/"):
            response = JSONResponse({"ok": False, "state": "preparing", "doing": doing, "error": PREPARING},
                                    status_code=503, headers=headers)
        else:
            response = PlainTextResponse(PREPARING[0].upper() + PREPARING[1:] + ".\n", status_code=503,
                                         headers=headers)
        await response(scope, receive, send)


def create_app(config: ServiceConfig, lifespan=None) -> Starlette:
    routes = [Route("/api/v1/uploads", api.upload, methods=["POST"]),
              Route("/api/v1/profiles", api.profile, methods=["POST"]),
              Route("/api/v1/jobs", api.threaded(api._jobs)),
              Route("/api/v1/jobs/{job:int}", api.threaded(api._job)),
              Route("/api/v1/jobs/{job:int}/gradescope", api.threaded(api._gradescope)),
              Route("/api/v1/limits", api.threaded(api._limits)),
              Route("/api/v1/status", api.threaded(api._status)),
              Route("/api/v1/login-code", api.login_code, methods=["POST"]),
              Route("/healthz", api.health)]
    routes += page_routes() + lti_routes()
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(_WhilePreparing, preparing=config.preparing)],
                    exception_handlers={HTTPException: api.refused, 404: api.not_found, Gone: api.gone,
                                        Exception: api.failed})
    app.state.service = ServiceContext(config)
    return app
