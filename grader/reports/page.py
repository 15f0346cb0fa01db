"""Every HTML page's one renderer: the batch run writes what it returns to files, the grading service serves the
same strings (grader/service/pages.py). No page has a second copy.

A page's style and script are files beside its template (templates/NAME.css, templates/NAME.js), put inline
so a written page is one self-contained file, and allowed by their hashes in the page's Content-Security-Policy:
nothing else may run or style the page, and it may fetch nothing, so a text a student controls that were ever
left unescaped still could not act. A live page (served by the service, `live` seconds between polls) also runs
templates/live.js, which may fetch only its own address again.
"""
from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2
from markupsafe import Markup

TEMPLATES = Path(__file__).resolve().parent / "templates"
LIVE_SCRIPT = "live.js"


@lru_cache(maxsize=None)
def asset(name: str) -> tuple[Markup, str]:
    """A style or script file of templates/, as inline text, and its CSP hash."""
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    return Markup(text), "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def policy(styles: list[str], scripts: list[str], live: bool = False, forms: bool = False,
           form_to: tuple[str, ...] = ()) -> str:
    """The Content-Security-Policy of a page with these style and script hashes; `live` lets it fetch itself,
    `forms` lets its forms post to its own service, and to the origins `form_to` names."""
    parts = ["default-src 'none'", "style-src " + " ".join(f"'{h}'" for h in styles) if styles else "style-src 'none'",
             "script-src " + " ".join(f"'{h}'" for h in scripts) if scripts else "script-src 'none'",
             "img-src data:", "base-uri 'none'",
             " ".join(["form-action 'self'", *form_to]) if forms else "form-action 'none'"]
    if live:
        parts.append("connect-src 'self'")
    return "; ".join(parts)


def page_parts(style: str, scripts: tuple[str, ...] = (), live: int | None = None, forms: bool = False,
               form_to: tuple[str, ...] = ()) -> dict:
    """What a page template needs besides its content: `css`, `scripts` (inline texts), `csp`, `live` (seconds
    between a served page's polls; None in a written file, which never polls)."""
    css, style_hash = asset(style)
    names = list(scripts) + ([LIVE_SCRIPT] if live else [])
    texts, hashes = zip(*(asset(n) for n in names)) if names else ((), ())
    return {"css": css, "scripts": list(texts),
            "csp": policy([style_hash], list(hashes), live=bool(live), forms=forms, form_to=form_to), "live": live}


@dataclass(frozen=True)
class Page:
    html: str
    csp: str  # what the page declares; the service sends it again as a header, where frame-ancestors also works


def render(env: jinja2.Environment, template: str, context: dict, style: str, scripts: tuple[str, ...] = (),
           live: int | None = None, forms: bool = False, form_to: tuple[str, ...] = ()) -> Page:
    parts = page_parts(style, scripts, live, forms, form_to)
    return Page(env.get_template(template).render({**context, **parts}), parts["csp"])
