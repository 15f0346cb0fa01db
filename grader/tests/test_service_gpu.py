"""The grading service on this machine's GPUs (issue 29's GPU run): the sample class uploaded through the student's
client (half of it) and through the Gradescope bridge (the other half) gets the verdicts `bin/grader grade` gives
the same class on the same GPUs. Timing varies from run to run, so timed cases are compared by status and their
points within a bound; every correctness verdict and correctness point must be equal.

Needs a GPU: skipped without one (docs/gpu-runs/ records its runs). SERVICE_GPUS=0,1 serves on two GPUs."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.tests.capture_pages import pack, save_pages
from grader.tests.service_server import REPO, ServiceUnderTest, stored_jobs, verdicts
from grader.tests.test_gradescope_bridge import autograder_tree, bridge, configure, results

# SERVICE_DEVICE=simulated (with GRADER_TEST_BACKENDS=1) runs the same steps on the fake GPUs: a check of the test's
# own flow before it spends GPU time.
DEVICE = os.environ.get("SERVICE_DEVICE", "gpu")
pytestmark = [pytest.mark.gpu] if DEVICE == "gpu" else [pytest.mark.slow]

CLASS = REPO / "data" / "sample-submissions"
GPUS = os.environ.get("SERVICE_GPUS", "0")
# A timed task's performance points, graded twice on the same GPU, differ by timing noise only.
PERFORMANCE_SLACK = 0.15  # of the task's performance points


def test_the_sample_class_through_the_service_gets_grades_verdicts(tmp_path):
    students = sorted(p.name for p in CLASS.iterdir() if p.is_dir())
    started = time.monotonic()
    graded = subprocess.run([sys.executable, "-m", "grader", "grade", str(CLASS), "--results", str(tmp_path / "batch"),
                             "--device", DEVICE, "--gpus", GPUS, "--no-progress"]
                            + (["--unsafe-no-sandbox"] if DEVICE == "simulated" else []), cwd=REPO, capture_output=True,
                            text=True, timeout=1200)
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    batch_seconds = time.monotonic() - started

    service = ServiceUnderTest(tmp_path / "service", students=students, gpus=GPUS, device=DEVICE, drain=120)
    service.start(timeout=900)
    try:
        client_half, bridge_half = students[::2], students[1::2]
        starter = tmp_path / "starter"
        (starter / "tools").mkdir(parents=True)
        shutil.copy(REPO / "starter" / "tools" / "service.py", starter / "tools")
        (starter / "service.json").write_text(json.dumps({"url": f"http://127.0.0.1:{service.port}",
                                                         "assignment": "cuda-kernels"}))
        uploaded = time.monotonic()
        clients = []
        for student in client_half:  # each student's own upload, as make upload runs it
            home = tmp_path / "home" / student
            env = {**os.environ, "HOME": str(home), "GRADER_TOKEN": service.token(student)}
            (starter / f"{student}.tar.gz").write_bytes(pack(CLASS / student))
            clients.append((student, subprocess.Popen(
                [sys.executable, "tools/service.py", "upload", "--archive", f"{student}.tar.gz"], cwd=starter, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        bridges = []
        for student in bridge_half:  # Gradescope's runner, one per submission
            root = autograder_tree(tmp_path / "autograder" / student, student, "2026-11-20T12:00:00+00:00",
                                   CLASS / student)
            config = configure(root / "zip", f"http://127.0.0.1:{service.port}", 900, service.assignment)
            bridges.append((student, root, config))
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(bridges)) as pool:
            # each bridge waits for its job behind the whole class's (132 s of grading on one H200): the bound is
            # the bridge's own (wait_seconds, 900 s above), not the helper's two minutes
            bridged = list(pool.map(lambda b: bridge(b[1], b[2], fallback="exit 3", timeout=900), bridges))
        for student, process in clients:
            out, err = process.communicate(timeout=1200)
            assert process.returncode == 0, f"{student}: {out[-2000:]}{err[-2000:]}"
        for (student, root, _), done in zip(bridges, bridged):
            assert done.returncode == 0, f"{student}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
            assert "tests" in results(root), student
        service_seconds = time.monotonic() - uploaded

        batch_db, served_db = tmp_path / "batch" / "grades.sqlite", service.results / "grades.sqlite"
        jobs = {j.student: (j.submission_id, j.seconds) for j in stored_jobs(service.results).values()
                if j.state == "done"}
        from grader.store.store import Store
        batch = Store(batch_db)
        latest = {r.student: int(r.id) for r in batch.latest_submissions().itertuples()}
        batch.close()
        assert set(jobs) == set(students) == set(latest)
        report, differences = [], []
        for student in students:
            ours, theirs = verdicts(served_db, jobs[student][0]), verdicts(batch_db, latest[student])
            # A task racecheck flags in both gradings races between threads: its verdicts may differ run to run.
            racy = {task for task, tool, status in ours["tools"] if tool == "racecheck" and status == "errors"} & \
                {task for task, tool, status in theirs["tools"] if tool == "racecheck" and status == "errors"}
            if ours["status"] != theirs["status"]:
                differences.append(f"{student}: {ours['status']} here, {theirs['status']} by grade")
            correctness = [c for c in ours["cases"] if c[3] == "correctness"]
            for mine, its in zip(correctness, [c for c in theirs["cases"] if c[3] == "correctness"]):
                if mine != its and mine[0] not in racy:
                    differences.append(f"{student}: {mine} here, {its[-1]} by grade")
            timed = [c for c in ours["cases"] if c[3] == "timed"], [c for c in theirs["cases"] if c[3] == "timed"]
            if timed[0] != timed[1] and not student.endswith("hang"):  # a hang's budget ends at another place
                differences.append(f"{student}: timed cases {timed[0]} here, {timed[1]} by grade")
            if ours["tools"] != theirs["tools"]:
                differences.append(f"{student}: sanitizer {ours['tools']} here, {theirs['tools']} by grade")
            for task, (c, p, pm) in ours["scores"].items():
                tc, tp, _ = theirs["scores"][task]
                if (c != tc and task not in racy) or abs(p - tp) > PERFORMANCE_SLACK * pm + 1e-9:
                    differences.append(f"{student} {task}: {c:g} + {p:.2f} points here, {tc:g} + {tp:.2f} by grade")
            report.append(f"{student}: {ours['status']}, {len(correctness)} correctness cases"
                          + (f" (racecheck flags {', '.join(sorted(racy))}: its verdicts may differ run to run)"
                             if racy else "")
                          + f", graded in {jobs[student][1]:.1f} s by the service")
        if os.environ.get("SERVICE_PAGES_OUT"):  # the pages of this run, for their screenshots (issue 30)
            saved = save_pages(service, [s for s in ("s08-fast", "s03-tiled-off-by-one") if s in jobs],
                               Path(os.environ["SERVICE_PAGES_OUT"]))
            print("pages saved: " + ", ".join(f"{name} {status}" for name, status in saved.items()))
        print(f"grade: the class in {batch_seconds:.1f} s; the service: uploaded to every result in "
              f"{service_seconds:.1f} s on GPUs {GPUS}\n" + "\n".join(report)
              + "\ndifferences:\n" + ("\n".join(differences) or "none"))
        assert not differences, "\n".join(differences)
    finally:
        service.stop()

