"""make demo's last words: how the sample class was graded and where its pages are.

How it was graded (timed on a GPU, or correctness only on the CPU backend) is read from the store's latest
grading run, as every report reads it (its stored untimed_reason), never worked out again; the pages
named are the ones that are there.

    python -m grader.reports.demo RESULTS      (the top Makefile's demo target runs it after grading and publishing)
"""
from __future__ import annotations

import sys
from pathlib import Path

from grader.reports.report import run_views
from grader.store.store import Store, StoreError

RULE = "=" * 78


def pages(results: Path) -> list[tuple[str, str]]:
    """(path, what it is) of each page the demo published that is there."""
    feedback = sorted((results / "feedback").glob("*.html"))
    found = [(results / "leaderboard" / "index.html", "the leaderboard"),
             (results / "overview.html", "how the class did, for the staff"),
             (results / "feedback", f"one page per student ({len(feedback)})" if feedback else "")]
    return [(f"{path}/" if path.is_dir() else str(path), what) for path, what in found
            if path.exists() and what]


def banner(results: Path) -> str:
    store = Store.existing(results / "grades.sqlite")
    try:
        run = store.latest_run()
        if run is None:
            raise StoreError(f"{results / 'grades.sqlite'} holds no grading run: make demo did not grade")
        view = run_views(store)[run["id"]]
        graded = len(store.latest_submissions())
    finally:
        store.close()
    if view["untimed"]:
        how = [f"make demo graded the sample class ({graded} submissions) for CORRECTNESS ONLY,",
               f"on the {view['device']}:",
               f"{view['untimed']}. Each score is correctness points only.",
               "With an NVIDIA GPU and the CUDA toolkit, make demo also times every submission against the solution."]
    else:
        how = [f"make demo graded the sample class ({graded} submissions) on the {view['device']}:",
               "checked, sanitized and timed against the solution."]
    listed = pages(results)
    width = max(len(path) for path, _ in listed) if listed else 0
    where = ["Its pages:", *(f"  {path:<{width}}  {what}" for path, what in listed)] if listed else \
        [f"It published no pages in {results}/."]
    return "\n".join([RULE, *how, *where, RULE])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m grader.reports.demo RESULTS", file=sys.stderr)
        return 2
    try:
        print(banner(Path(argv[0])))
    except StoreError as e:
        print(f"make demo: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
