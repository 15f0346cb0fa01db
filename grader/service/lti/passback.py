"""Grades back to the LMS (LTI Assignment and Grade Services): each student who launched from a graded link has
their current score posted to that link's line item, whenever it differs from the score the LMS last accepted.
The score is the store's, as the Canvas export reads it: the latest submission's final total (overrides applied,
the late penalty taken; grades_table). Not sent: a total whose performance was not measured (graded without a
GPU: the export refuses it too), and, before the rubric's [hidden] until, any total at all (the LMS shows students
their grade, and it would tell how the hidden cases went): the LMS gets "Pending" with a comment saying when.
A failed try is tried again after 10 s, 30 s, 1, 5 and 15 minutes, then hourly; `bin/grader status` shows what
waits and why. The service runs it in a thread of its own (`run`); it reads the store and writes only lti_grades."""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pandas as pd

from grader.core import visibility
from grader.core.rubric import Rubric
from grader.exports.common import not_measured
from grader.reports.report import grades_table
from grader.service.lti import platforms, services
from grader.service.lti.services import SCORE_SCOPE
from grader.store.jobs import Jobs
from grader.store.store import Store

RETRY_SECONDS = (10, 30, 60, 300, 900, 3600)
ROUND_SECONDS = 5.0
ROSTER_SECONDS = 3600
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


def current_scores(store: Store, rubric: Rubric, now: datetime) -> dict[str, dict]:
    """The score each graded student's LMS grade should be now (AGS's score fields, without userId and time)."""
    withheld = visibility.student(now).hides(rubric)
    out = {}
    for row in grades_table(store, rubric).itertuples():
        if pd.isna(row.total):  # on the roster without a submission: nothing to send
            continue
        if withheld:
            out[row.student] = {"activityProgress": "Completed", "gradingProgress": "Pending",
                                "comment": f"The points are withheld until {visibility.shown_until(rubric)}: "
                                           "the assignment has hidden cases."}
        else:
            out[row.student] = {"scoreGiven": float(row.total), "scoreMaximum": float(row.max_total),
                                "activityProgress": "Completed", "gradingProgress": "FullyGraded"}
    return out


class Passback:
    def __init__(self, results: Path, rubric: Rubric, log=print):
        self.results, self.rubric, self.log = Path(results), rubric, log
        self.tokens = services.Tokens(results)
        self.stopping = threading.Event()

    def run(self):
        """Rounds until stopped; a round that fails (the store busy, a bad file) is said and the next one tries.
        Each hour, the roster from the LMS's courses too (roster.py)."""
        roster_due = time.monotonic() + ROSTER_SECONDS
        while not self.stopping.wait(ROUND_SECONDS):
            try:
                self.round()
            except Exception as e:  # the service goes on: grades wait for the next round
                self.log(f"lti: grade passback round failed: {type(e).__name__}: {e}")
            if time.monotonic() >= roster_due:
                roster_due = time.monotonic() + ROSTER_SECONDS
                self.refresh_roster()

    def refresh_roster(self):
        from grader.service.lti import roster
        store = Store(self.results / "grades.sqlite")
        try:
            courses = Jobs(store).lti_contexts()
        finally:
            store.close()
        if not courses:
            return
        try:
            done = roster.import_roster(self.results, self.tokens)
        except Exception as e:  # (ServiceFailed's sentence, or the store's) the stored roster stays as it was
            self.log(f"lti: the roster was not refreshed: {e}")
            return
        counts = [f"{d.course}: {d.learners} student{'' if d.learners == 1 else 's'}" for d in done]
        self.log("lti: roster refreshed: " + "; ".join(counts))

    def round(self, now: datetime | None = None) -> int:
        """Sends what differs from what the LMS holds; returns how many scores were accepted."""
        store = Store(self.results / "grades.sqlite")
        try:
            jobs = Jobs(store)
            rows = jobs.lti_grades()
            if not rows:
                return 0
            now = now or datetime.now(timezone.utc)
            wanted = current_scores(store, self.rubric, now)
            setup = platforms.load(self.results)
            accepted = 0
            for row in rows:
                score = wanted.get(row["student"])
                if score is None:
                    continue
                text = json.dumps(score, sort_keys=True)
                if text == row["sent"] or (row["next_try"] and row["next_try"] > now.isoformat(timespec="seconds")):
                    continue
                lacking = not_measured(store, self.rubric, row["student"]) if "scoreGiven" in score else ""
                if lacking:
                    jobs.lti_grade_held(row, f"not sent: {lacking}")
                    continue
                try:
                    self.send(setup, row, score, now)
                except services.ServiceFailed as e:
                    wait = RETRY_SECONDS[min(row["attempts"], len(RETRY_SECONDS) - 1)]
                    jobs.lti_grade_failed(row, str(e), now + timedelta(seconds=wait))
                    self.log(f"lti: {row['student']}'s grade not sent ({e}); trying again in {wait} s")
                    continue
                jobs.lti_grade_sent(row, text)
                accepted += 1
                self.log(f"lti: {row['student']}'s grade sent: {score.get('scoreGiven', score['gradingProgress'])}")
            return accepted
        finally:
            store.close()

    def send(self, setup: platforms.LtiSetup, row: dict, score: dict, now: datetime):
        platform = setup.find(row["issuer"], row["client_id"])
        if platform is None:
            raise services.ServiceFailed(f"the platform {row['issuer']} is no longer registered")
        body = json.dumps({**score, "userId": row["user_id"], "timestamp": now.isoformat(timespec="seconds")})
        parts = urlsplit(row["lineitem"])
        url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))
        token = self.tokens.token(platform, SCORE_SCOPE)
        services.call("POST", url, body.encode(), {"Content-Type": SCORE_TYPE, "Authorization": f"Bearer {token}"})
