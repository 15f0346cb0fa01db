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
import secrets
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

import pandas as pd

from grader.core import visibility
from grader.core.rubric import Rubric
from grader.exports.common import not_measured
from grader.reports.report import grades_table
from grader.service.lti import keys, platforms
from grader.service.lti.launch import SCORE_SCOPE
from grader.store.jobs import Jobs
from grader.store.store import Store

RETRY_SECONDS = (10, 30, 60, 300, 900, 3600)
ROUND_SECONDS = 5.0
HTTP_SECONDS = 20
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class PassbackError(Exception):
    """A try that failed; the message is what the staff read in `status`."""


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
        self._tokens: dict[tuple[str, str], tuple[str, float]] = {}  # (issuer, client id): (token, expires)
        self.stopping = threading.Event()

    def run(self):
        """Rounds until stopped; a round that fails (the store busy, a bad file) is said and the next one tries."""
        while not self.stopping.wait(ROUND_SECONDS):
            try:
                self.round()
            except Exception as e:  # the service goes on: grades wait for the next round
                self.log(f"lti: grade passback round failed: {type(e).__name__}: {e}")

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
                except PassbackError as e:
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
            raise PassbackError(f"the platform {row['issuer']} is no longer registered")
        if not platform.token_url:
            raise PassbackError(f"{platform.label} has no token URL registered (`bin/grader lti platform "
                                "--token-url`)")
        body = json.dumps({**score, "userId": row["user_id"], "timestamp": now.isoformat(timespec="seconds")})
        parts = urlsplit(row["lineitem"])
        url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))
        _post(url, body.encode(), {"Content-Type": SCORE_TYPE,
                                   "Authorization": f"Bearer {self.access_token(platform)}"})

    def access_token(self, platform: platforms.Platform) -> str:
        """An OAuth 2 token for posting scores (client credentials, the tool's signed JWT as its credential),
        kept until a minute before it expires."""
        known = self._tokens.get((platform.issuer, platform.client_id))
        if known and known[1] > time.time():
            return known[0]
        jwt = platforms.jose()
        key = keys.current(self.results)
        issued = int(time.time())
        assertion = jwt.encode({"iss": platform.client_id, "sub": platform.client_id, "aud": platform.token_url,
                                "iat": issued, "exp": issued + 300, "jti": secrets.token_urlsafe(16)},
                               key.private_pem, algorithm="RS256", headers={"kid": key.kid})
        form = urlencode({"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
                          "client_assertion": assertion, "scope": SCORE_SCOPE}).encode()
        reply = _post(platform.token_url, form, {"Content-Type": "application/x-www-form-urlencoded"})
        try:
            answer = json.loads(reply)
            token, seconds = answer["access_token"], int(answer.get("expires_in", 3600))
        except (ValueError, KeyError, TypeError):
            raise PassbackError(f"{platform.label}'s token endpoint answered without an access token") from None
        self._tokens[(platform.issuer, platform.client_id)] = (token, time.time() + seconds - 60)
        return token


def _post(url: str, body: bytes, headers: dict) -> bytes:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=HTTP_SECONDS) as reply:
            return reply.read(1 << 20)
    except urllib.error.HTTPError as e:
        said = e.read(300).decode("utf-8", "replace").strip().replace("\n", " ")
        raise PassbackError(f"{url} answered {e.code}{': ' + said if said else ''}") from None
    except (urllib.error.URLError, OSError) as e:
        raise PassbackError(f"{url} could not be reached ({getattr(e, 'reason', e)})") from None
