"""The service as the staff see it: the queue, each worker (its GPU, state, job, throughput), the batches in
Slurm's hands (`serve --slurm`: each batch's jobs and their phase), failed jobs. `bin/grader status` prints it;
the service's /api/v1/status serves the same dictionary."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from grader.store.faults import results_fault
from grader.store.jobs import BUILD_PHASES, BUILDING, BUILT, FAILED, QUEUED, RUNNING, SLURM_WORKER, Jobs


def service_status(jobs: Jobs, now: datetime | None = None) -> dict:
    now = now or datetime.now(timezone.utc)
    hour_ago = (now - timedelta(hours=1)).isoformat(timespec="seconds")
    finished = jobs.finished_since(hour_ago)
    running = jobs.running()
    workers = []
    for w in jobs.workers():
        mine = [row for row in finished if row[0] == w["name"] and row[2] is not None]
        staged = [j.phase for j in running if j.worker == w["name"] and j.phase in BUILD_PHASES]
        workers.append({"name": w["name"], "gpu": w["gpu"], "device": device_words(w["name"], w["gpu"]),
                        "state": w["state"], "job": w["job"],
                        # what its build stage holds ahead of its GPU (grader/service/worker.py)
                        "building": staged.count(BUILDING), "built": staged.count(BUILT),
                        "reason": w["reason"], "since": w["started"], "done": w["done"],
                        "jobs_last_hour": len(mine),
                        "seconds_per_job": mean([row[2] for row in mine]),
                        # what the jobs cost the worker's GPU (held), and their build before it on the CPU (issue 43)
                        "gpu_seconds_per_job": mean([row[3] for row in mine if row[3] is not None]),
                        "build_seconds_per_job": mean([row[4] for row in mine if row[4] is not None])})
    queued = jobs.jobs(states=(QUEUED,))
    oldest = min((j.received for j in queued), default=None)
    batches: dict[str, list[dict]] = {}
    for j in jobs.running(SLURM_WORKER):
        batches.setdefault(j.claim, []).append({"job": j.id, "student": j.student, "phase": j.phase})
    fault = results_fault(jobs.store.path.parent)
    return {"fault": f"the grading machine's {fault}: grading waits until it is fixed, and goes on by itself; uploads "
                     "are refused meanwhile" if fault else "",
            "queue": len(queued), "running": len(jobs.jobs(states=(RUNNING,))),
            "oldest_waiting_since": oldest, "done_last_hour": len(finished), "workers": workers,
            "batches": [{"batch": b, "jobs": these} for b, these in batches.items()],
            "failed": [{"job": j.id, "student": j.student, "error": j.error, "finished": j.finished}
                       for j in jobs.jobs(states=(FAILED,))][-20:],
            "lms_grades": lms_grades(jobs)}


def lms_grades(jobs: Jobs) -> dict:
    """The scores going back to the LMS (grader/service/lti/passback.py): how many students' it holds, and those
    not sent, with why and when they are tried again."""
    rows = jobs.lti_grades()
    return {"students": len({r["student"] for r in rows}), "sent": sum(1 for r in rows if r["sent_at"]),
            "waiting": [{"student": r["student"], "why": r["error"], "next_try": r["next_try"],
                         "lineitem": r["lineitem"]} for r in rows if r["error"]]}


def mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def device_words(name: str, gpu: str | None) -> str:
    """What a worker grades on, as the staff read it: "GPU 1", "this machine's CPU" (`serve --device cpu`), or the
    Slurm dispatcher's own description."""
    if name == SLURM_WORKER:
        return str(gpu or "")
    return "this machine's CPU" if gpu == "cpu" else f"GPU {gpu}"


def status_text(status: dict) -> str:
    lines = [f"FAULT: {status['fault']}"] if status.get("fault") else []
    lines += [f"queue: {status['queue']} waiting"
             + (f" (the oldest since {status['oldest_waiting_since']})" if status["oldest_waiting_since"] else "")
             + f", {status['running']} being graded; {status['done_last_hour']} graded in the last hour"]
    if not status["workers"]:
        lines.append("no worker has started: is `bin/grader serve` running?")
    for w in status["workers"]:
        pace = (f"{w['jobs_last_hour']} jobs in the last hour, {w['seconds_per_job']} s each"
                if w["jobs_last_hour"] else "no job in the last hour")
        if w["jobs_last_hour"] and w.get("gpu_seconds_per_job") is not None:
            pace += (f" (each held the {'worker' if w['gpu'] == 'cpu' else 'GPU'} {w['gpu_seconds_per_job']} s, "
                     f"built before it in {w['build_seconds_per_job']} s on the CPU)")
        doing = f" job {w['job']}" if w["job"] else ""
        if w.get("built") or w.get("building"):
            doing += f" (build stage: {w['built']} built, {w['building']} building)"
        why = f": {w['reason']}" if w["reason"] else ""
        device = device_words(w["name"], w["gpu"])
        where = f", {device}" if w["name"] == SLURM_WORKER else f" ({device})"  # what the dispatcher does
        lines.append(f"  {w['name']}{where}: {w['state']}{doing}{why}; {pace}")
    for b in status.get("batches", []):
        lines.append(f"  Slurm batch {b['batch']}: " + ", ".join(f"job {j['job']} {j['student']} ({j['phase']})"
                                                                 for j in b["jobs"]))
    grades = status.get("lms_grades") or {}
    if grades.get("students"):
        lines.append(f"grades to the LMS (LTI): {grades['students']} student(s), {grades['sent']} sent"
                     + (f"; not sent ({len(grades['waiting'])}):" if grades["waiting"] else ""))
        lines += [f"  {g['student']}: {g['why']}" + (f" (next try {g['next_try']})" if g["next_try"] else "")
                  for g in grades["waiting"]]
    if status["failed"]:
        lines.append(f"failed jobs ({len(status['failed'])}, the latest last):")
        lines += [f"  job {f['job']} {f['student']}: {f['error']}" for f in status["failed"]]
    return "\n".join(lines)
