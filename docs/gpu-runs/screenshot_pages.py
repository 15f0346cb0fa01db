"""Screenshots of a results folder's pages, as a person opens them: the leaderboard, feedback pages and the overview,
in headless Chromium at a laptop's width (1280 px) and a phone's (390 px), whole pages.

    .venv/bin/python docs/gpu-runs/screenshot_pages.py RESULTS OUT --student s08-fast --student s03-tiled-off-by-one

RESULTS is a graded results folder whose reports and leaderboard are written (`grade`, then `leaderboard`);
OUT gets leaderboard-<width>.png, feedback-<student>-<width>.png and overview-<width>.png. Needs Debian's chromium
and chromium-driver (`make deps-browser`); the browser is the tests' own (grader/tests/browser.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from grader.tests.browser import Browser, find_browser  # noqa: E402

WIDTHS = {"1280": (1280, 900, False), "390": (390, 844, True)}  # name: CSS width, height, a phone's screen
PHONE_SCALE = 1  # device pixels per CSS pixel in a phone's screenshot: its layout as laid out, in small files


def phone_page(b: Browser, path: Path, width: int) -> Path:
    """A phone's whole page: the emulated screen made as tall as the page (resizing the window, as
    Browser.screenshot does, leaves an emulated phone's screen as it was)."""
    height = b.run("return Math.ceil(document.documentElement.scrollHeight);")
    b.cdp("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": PHONE_SCALE,
                                                 "mobile": True})
    return b.screenshot(path, full_page=False)


def pages(results: Path, students: list[str]) -> dict[str, Path]:
    found = {"leaderboard": results / "leaderboard" / "index.html", "overview": results / "overview.html"}
    found.update({f"feedback-{s}": results / "feedback" / f"{s}.html" for s in students})
    missing = [str(p) for p in found.values() if not p.is_file()]
    if missing:
        raise SystemExit(f"screenshot_pages: no such page: {', '.join(missing)} (grade, then publish the leaderboard)")
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--student", action="append", default=[], help="a student whose feedback page to take (repeat)")
    args = p.parse_args()
    browser, driver = find_browser()
    if browser is None or driver is None:
        raise SystemExit("screenshot_pages: Chromium and chromedriver are not installed (make deps-browser)")
    todo = pages(args.results, args.student)
    for label, (width, height, phone) in WIDTHS.items():
        for name, page in todo.items():
            with Browser(browser, driver, width=width, height=height, phone=phone) as b:
                b.open(page.resolve().as_uri())
                target = args.out / f"{name}-{label}.png"
                path = phone_page(b, target, width) if phone else b.screenshot(target)
                print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
