"""A listing's results (reports/student_view.result_summaries, the service's job_views): the same numbers as each
job's own result, read in a number of queries that does not grow with the class.

The staff's `GET /api/v1/jobs` and a student's page list every upload; each used to build the whole condensed
feedback of every job (tenths of a second each, hundreds of jobs after a deadline rush: minutes), which the
listing then threw away."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from grader.core.visibility import STAFF_VIEW
from grader.outcomes.isolation import Isolation
from grader.reports.student_view import result_summaries, student_result
from grader.scoring.chain import chain_for_result, settle_stored
from grader.service.views import job_view, job_views
from grader.store.jobs import Jobs
from grader.store.store import Store
from grader.tests.leaderboard_class import DEVICE, LIMITS, Entry, result_for
from grader.tests.test_hidden_cases import AFTER, BEFORE, HIDDEN_CHECK, rubric_from, rubric_text

NOW = datetime(2026, 12, 2, tzinfo=timezone.utc)
# graded, one task failing, a hidden check failed, timed after a failed check, not built, not graded
ENTRIES = [Entry("a1", 1.2), Entry("a2", None), Entry("a3", 0.9, failed_check=True), Entry("a4", status="build_failed"),
           Entry("a5", status="rejected"), Entry("a6", 0.7, received="2026-12-20T10:00:00+00:00")]


@pytest.fixture
def hiding(tmp_path, registry):
    return rubric_from(tmp_path, registry, rubric_text())


def store_of(path, rubric, registry, entries=ENTRIES) -> Store:
    """A store of `entries`, each graded once, and a TA's override of a1's dot."""
    store = Store(path)
    run = store.start_run(7, "1.0.0-test", rubric.sha256, registry.raw, [DEVICE], LIMITS,
                          Isolation("none", note="test"), "test", timed=True, untimed_reason="")
    for entry in entries:
        result = result_for(entry, rubric, registry)
        if entry.student == "a2":  # a hidden check of dot failed too
            for case in result.cases:
                if (case.task, case.shape, case.kind) == ("dot", HIDDEN_CHECK, "correctness"):
                    case.status, case.message = "wrong", "3 of 561 elements are wrong"
        store.save(run, result, "1.0.0-test", rubric.sha256, rubric.max_points,
                   chain_for_result(rubric, result, entry.status == "graded"))
    store.finish_run(run)
    store.add_override("a1", "dot", 2.0, "a TA looked", "TA", settle_stored)
    return store


def without_feedback(result: dict) -> dict:
    """student_result's dict as a listing has it: no condensed feedback, no note per task."""
    return {**{k: v for k, v in result.items() if k != "feedback"},
            "tasks": [{k: v for k, v in t.items() if k != "note"} for t in result["tasks"]]}


@pytest.mark.parametrize("reader", ["student before the date", "student after the date", "staff"])
def test_a_summary_has_every_number_of_the_full_result(tmp_path, hiding, registry, reader):
    now, view = {"student before the date": (BEFORE, None), "student after the date": (AFTER, None),
                 "staff": (BEFORE, STAFF_VIEW)}[reader]
    store = store_of(tmp_path / "grades.sqlite", hiding, registry)
    try:
        ids = [int(i) for i in store.submissions()["id"]]
        summaries = result_summaries(store, hiding, ids + [9999], now, view)
        assert sorted(summaries) == ids  # (an id the store does not hold is left out)
        for sid in ids:
            assert summaries[sid] == without_feedback(student_result(store, hiding, sid, now, view)), sid
        withheld = [t["task"] for s in summaries.values() for t in s["tasks"] if t["points"] is None]
        assert bool(withheld) == (reader == "student before the date")  # the fixture shows each reader's case
    finally:
        store.close()


def statements(store: Store, listing) -> int:
    """How many SQL statements `listing()` runs on the store."""
    count = [0]
    store.db.set_trace_callback(lambda sql: count.__setitem__(0, count[0] + 1))
    try:
        listing()
    finally:
        store.db.set_trace_callback(None)
    return count[0]


def test_a_listing_asks_the_store_as_often_for_a_class_as_for_a_few(tmp_path, hiding, registry):
    small = store_of(tmp_path / "small.sqlite", hiding, registry)
    big = store_of(tmp_path / "big.sqlite", hiding, registry,
                   ENTRIES + [Entry(f"b{i:02d}", 1.0 + i / 100) for i in range(20)])
    try:
        counts = []
        for store in (small, big):
            jobs = Jobs(store)
            listed = [jobs.job(i) for i in _jobs_for_every_submission(store)]
            views = []
            counts.append(statements(store, lambda: views.extend(job_views(jobs, hiding, listed, 2, NOW))))
            assert views == [job_view(jobs, hiding, j, 2, NOW, feedback=False) for j in listed]  # each job's own
        assert counts[0] == counts[1], counts
    finally:
        small.close()
        big.close()


def _jobs_for_every_submission(store: Store) -> list[int]:
    """A service job for each stored submission, admitted, claimed and finished with it as a worker does; their
    ids."""
    jobs, ids = Jobs(store), []
    for sub in store.submissions().itertuples():
        job_id, _ = jobs.admit({"student": sub.student, "upload_id": f"u{sub.id}", "token": "t",
                                "received": NOW.isoformat(), "received_from": "service", "archive": "a.tar.gz",
                                "sha256": sub.sha256, "bytes": 1}, lambda recent: None)
        assert jobs.claim("gpu0", f"c{sub.id}").id == job_id
        assert jobs.finish_merged(job_id, f"c{sub.id}", int(sub.id), sub.status, True, 1.0, sub.sha256)
        ids.append(job_id)
    return ids
