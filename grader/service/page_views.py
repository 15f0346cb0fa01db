"""What the service's own pages show (templates/attempts.html.j2, staff.html.j2), made from the store's rows and the
same job views as the API (grader/service/views.py), so a page and `make history` never disagree."""
from __future__ import annotations

from datetime import datetime, timezone

from grader.core import visibility
from grader.core.rubric import Rubric
from grader.core.status import SubmissionStatus, submission_word
from grader.reports.report import review_table
from grader.service import policy
from grader.service.status import service_status
from grader.service.views import job_name, job_views
from grader.store.jobs import CANCEL_FROM, CANCELLED, FAILED, GRADE, QUEUED, REQUEUE_FROM, RUNNING, Jobs


def doing(view: dict) -> str:
    """A job's phase in words: where it waits, or what it is doing."""
    if view["state"] == QUEUED:
        where = f"{_ordinal(view['position'])} in the queue" if view["position"] else "waiting"
    elif view["state"] == RUNNING:
        progress = view["progress"]
        where = view["phase_words"] + (
            f", {progress['done'] or 0} of {progress['total']} cases" if progress else "")
    else:
        return ""
    return where + (f", about {_duration(view['eta_seconds'])} to go" if view["eta_seconds"] else "")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def when(stamp: str | None) -> str:
    """A stored UTC time as a page shows it: 2026-11-28 15:22 UTC."""
    if not stamp:
        return ""
    return f"{datetime.fromisoformat(stamp).astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def limits_line(jobs: Jobs, jobs_of_student: list, rubric: Rubric, now: datetime) -> str:
    """What the rate limit leaves a student, in the words `make upload` and `make history` print (policy.standing):
    the refusal an upload would get now (one in flight, or the hourly limit and when the next upload is possible),
    or how many uploads are left."""
    line, _ = policy.standing(jobs_of_student, rubric.service, now, jobs.attempt_number)
    return line[:1].upper() + line[1:] + "."


def trend(rows: list[dict]) -> dict | None:
    """The score of each graded attempt, as points of a small SVG line (None with fewer than two)."""
    graded = [r for r in reversed(rows) if r["total"] is not None]
    if len(graded) < 2:
        return None
    width, height, left, top_y, bottom = 600, 170, 40, 12, 140
    top = max(r["max_total"] for r in graded) or 1.0
    step = (width - left - 30) / (len(graded) - 1)
    dots = [{"x": round(left + 15 + i * step, 1), "y": round(bottom - (bottom - top_y) * r["total"] / top, 1),
             "attempt": r["attempt"], "total": r["total"]} for i, r in enumerate(graded)]
    return {"width": width, "height": height, "left": left, "top_y": top_y, "bottom": bottom, "top": top,
            "dots": dots, "points": " ".join(f"{d['x']},{d['y']}" for d in dots)}


def attempt_row(view: dict, link: str | None) -> dict:
    result = view["result"]
    return {"job": view["job"], "attempt": view["attempt"], "name": view["name"], "received": when(view["received"]),
            "state": view["state"],
            "doing": doing(view), "error": view["error"],
            "total": result["total"] if result else None, "max_total": result["max_total"] if result else None,
            "points": {t["task"]: t["points"] for t in result["tasks"]} if result else None,
            "status": (submission_word(result["status"]) if result and result["status"] != SubmissionStatus.GRADED
                       else ""),
            "link": link if result else None}


def attempts_context(jobs: Jobs, rubric: Rubric, student: str, workers: int, now: datetime, staff: bool) -> dict:
    """One student's attempts, the newest first, as the student reads them at `now` (hidden cases counted, not
    shown), or with `staff`, everything."""
    mine = jobs.jobs(student)
    # the attempts are the uploads graded; make profile GPU=1's requests are the client's to show
    views = job_views(jobs, rubric, [j for j in mine if j.kind == GRADE], workers, now, staff=staff)
    prefix = "/staff/jobs/" if staff else "/me/attempts/"
    rows = [attempt_row(v, f"{prefix}{v['job']}") for v in reversed(views)]
    hidden = next((v["result"]["hidden"] for v in reversed(views) if v["result"] and v["result"]["hidden"]), None)
    return {"student": student, "staff": staff, "rows": rows, "trend": trend(rows),
            "tasks": [t.id for t in rubric.tasks], "limits": limits_line(jobs, mine, rubric, now),
            "hidden": (f"{hidden['cases']} hidden case{'s' if hidden['cases'] != 1 else ''}: graded with every upload, "
                       f"their results and the points of the tasks that have them shown after "
                       f"{visibility.shown_until(rubric)}."
                       if hidden else "")}


def _allowed(state: str) -> dict:
    """Which of the staff's buttons a job in `state` gets (the states the store acts on)."""
    return {"can_requeue": state in REQUEUE_FROM, "can_cancel": state in CANCEL_FROM}


def staff_context(jobs: Jobs, rubric: Rubric, workers: int, now: datetime) -> dict:
    """The queue with each job's phase and wait, the workers, failed and cancelled jobs, what is flagged for review
    in the latest grades, every student's latest attempt, and the staff's actions."""
    status = service_status(jobs, now)
    queue = jobs.queue()
    order = {job_id: i for i, job_id in enumerate(queue)}
    open_jobs = sorted(jobs.jobs(states=(RUNNING, QUEUED)), key=lambda j: (j.state != RUNNING, order.get(j.id, 0)))
    rows = []
    for j, view in zip(open_jobs, job_views(jobs, rubric, open_jobs, workers, now, staff=True)):
        since = datetime.fromisoformat(j.received)
        waited = ((datetime.fromisoformat(j.started) if j.started and j.state == RUNNING else now) - since)
        rows.append({"job": j.id, "student": j.student, "name": view["name"], "state": j.state,
                     "doing": doing(view), "waited": _duration(max(0.0, waited.total_seconds())),
                     "worker": j.worker if j.state == RUNNING else "", **_allowed(j.state)})
    ended = jobs.jobs(states=(FAILED, CANCELLED))[-30:]
    failed = [{"job": j.id, "student": j.student, "name": job_name(j, jobs.attempt_number(j)), "state": j.state,
               "error": j.error, "finished": when(j.finished), **_allowed(j.state)} for j in reversed(ended)]
    flagged = [{"student": f["student"], "task": f["task"], "case": f"{f['dtype']} {f['shape']}".strip(),
                "flag": f["flag"], "message": f["message"] or ""}
               for f in review_table(jobs.store).astype(object).fillna("").to_dict("records")]
    counts: dict[str, int] = {}
    last: dict[str, str] = {}
    for j in jobs.jobs():
        if j.kind != GRADE:
            continue
        counts[j.student] = counts.get(j.student, 0) + 1
        last[j.student] = j.state
    graded = jobs.store.latest_submissions()
    totals = dict(zip(graded["student"], graded["total"])) if len(graded) else {}
    students = [{"student": s, "attempts": counts[s], "state": last[s],
                 "total": float(totals[s]) if s in totals and totals[s] == totals[s] else None} for s in sorted(counts)]
    return {"status": status, "jobs": rows, "failed": failed, "flagged": flagged, "students": students,
            "actions_log": [{**a, "at": when(a["at"])} for a in jobs.actions()]}
