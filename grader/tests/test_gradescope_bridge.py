"""Gradescope's run_autograder through the course's grading service (grader/gradescope/bridge.py), in a fake
/autograder tree, against a canned service (canned_service.py); the CPU grading it falls back to is a stand-in
command (GRADER_FALLBACK), so nothing is built."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from grader.tests.service_server import rubric_with

from grader.tests.canned_service import REPO, CannedService, closed_port, job, running

GRADESCOPE_RESULTS = {"score": 71.5, "output": "graded on the course's GPU",
                      "tests": [{"name": "add", "score": 8.0, "max_score": 8.0, "visibility": "visible"}]}
CPU_RESULTS = {"score": 40.0, "output": "graded on the CPU: correctness only"}
TOKEN = "assignment-token-0123456789"


@pytest.fixture
def autograder(tmp_path) -> Path:
    """/autograder as Gradescope lays it out: the submission, its metadata, an empty results folder."""
    root = tmp_path / "autograder"
    (root / "submission" / "kernels").mkdir(parents=True)
    (root / "submission" / "kernels" / "add.cu").write_text("// add\n")
    (root / "submission" / "dot.cu").write_text("// dot\n")
    (root / "submission" / "notes.md").write_text("not a task file\n")
    (root / "submission" / "nickname.txt").write_text("Ada\n")
    (root / "submission_metadata.json").write_text(json.dumps({
        "created_at": "2026-11-20T23:59:59.123456-08:00",
        "users": [{"sid": "s01", "email": "ada@example.edu", "name": "Ada"}]}))
    (root / "results").mkdir()
    return root


def configure(tmp_path: Path, url: str, wait_seconds: float = 60, token: str = TOKEN) -> Path:
    """The zip's service.json and assignment token (what `make gradescope ASSIGNMENT_TOKEN=...` puts in it)."""
    folder = tmp_path / "zip-config"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "assignment-token").write_text(token + "\n")
    config = folder / "service.json"
    config.write_text(json.dumps({"url": url, "token_file": "assignment-token", "wait_seconds": wait_seconds}))
    return config


def autograder_tree(root: Path, student: str, created_at: str, files: dict[str, str] | Path) -> Path:
    """/autograder for one submission of `student`: its files (names to text, or a folder copied whole), the
    metadata with Gradescope's time, an empty results folder."""
    if isinstance(files, Path):
        shutil.copytree(files, root / "submission")
    else:
        (root / "submission").mkdir(parents=True)
        for name, text in files.items():
            (root / "submission" / name).write_text(text)
    (root / "submission_metadata.json").write_text(json.dumps({"created_at": created_at, "users": [{"sid": student}]}))
    (root / "results").mkdir()
    return root


def bridge(root: Path, config: Path, fallback: str | None = None, command: list[str] | None = None,
           timeout: float = 120):
    """The bridge as Gradescope's runner starts it; `timeout`: how long the test lets it run (a class on one GPU
    keeps the last of its jobs waiting for the others')."""
    cpu = fallback if fallback is not None else (
        f"printf '%s' '{json.dumps(CPU_RESULTS)}' > '{root}/results/results.json'; "
        f"touch '{root}/fallback-ran'")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "GRADESCOPE_SERVICE": str(config), "GRADER_FALLBACK": cpu,
           "AUTOGRADER_SOURCE": str(REPO)}
    return subprocess.run(command or [sys.executable, "-m", "grader.gradescope.bridge"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def results(root: Path) -> dict:
    return json.loads((root / "results" / "results.json").read_text())


@pytest.fixture
def service():
    with running(CannedService()) as canned:
        yield canned


def test_results_json_is_the_services_gradescope_reply(autograder, service, tmp_path):
    service.reply("POST /api/v1/uploads", (202, job(17)))
    service.reply("GET /api/v1/jobs/17/gradescope", (200, GRADESCOPE_RESULTS))
    done = bridge(autograder, configure(tmp_path, service.url))
    assert done.returncode == 0, done.stdout + done.stderr
    assert results(autograder) == GRADESCOPE_RESULTS
    assert not (autograder / "fallback-ran").exists()


def test_the_upload_names_the_student_and_gradescopes_time_with_the_assignment_token(autograder, service, tmp_path):
    service.reply("POST /api/v1/uploads", (202, job(17)))
    service.reply("GET /api/v1/jobs/17/gradescope", (200, GRADESCOPE_RESULTS))
    assert bridge(autograder, configure(tmp_path, service.url)).returncode == 0
    (sent,) = service.sent("POST /api/v1/uploads")
    assert sent.headers["Authorization"] == f"Bearer {TOKEN}"
    assert sent.headers["Student"] == "s01"
    assert sent.headers["Received-At"] == "2026-11-21T07:59:59+00:00"


def test_the_archive_holds_the_task_files_and_the_nickname_as_make_submit_packs_them(autograder, service, tmp_path):
    service.reply("POST /api/v1/uploads", (202, job(17)))
    service.reply("GET /api/v1/jobs/17/gradescope", (200, GRADESCOPE_RESULTS))
    assert bridge(autograder, configure(tmp_path, service.url)).returncode == 0
    (sent,) = service.sent("POST /api/v1/uploads")
    with tarfile.open(fileobj=io.BytesIO(sent.body), mode="r:gz") as tar:
        held = {m.name: tar.extractfile(m).read() for m in tar}
    assert held == {"add.cu": b"// add\n", "dot.cu": b"// dot\n", "nickname.txt": b"Ada\n"}


def test_the_bridge_follows_a_queued_job_until_it_is_done(autograder, service, tmp_path):
    service.reply("POST /api/v1/uploads", (202, job(17, state="queued", position=1)))
    service.reply("GET /api/v1/jobs/17", (200, job(17)))
    service.reply("GET /api/v1/jobs/17/gradescope", (200, GRADESCOPE_RESULTS))
    done = bridge(autograder, configure(tmp_path, service.url))
    assert done.returncode == 0, done.stderr
    assert results(autograder) == GRADESCOPE_RESULTS and "upload #3 (job id 17)" in done.stdout


def note_then_cpu(root: Path) -> str:
    """The output of a CPU grade after the service could not give one: the note, then the grader's own output."""
    graded = results(root)
    assert (root / "fallback-ran").exists() and graded["score"] == CPU_RESULTS["score"]
    first, rest = graded["output"].split("\n\n", 1)
    assert rest == CPU_RESULTS["output"]
    assert first.startswith("The course's GPU service ") and first.endswith(
        ": this is a correctness-only grade on Gradescope's CPU; your GPU result will come from the course's "
        "service later.")
    return first


def test_an_unreachable_service_falls_back_to_the_cpu_and_says_so_first(autograder, tmp_path):
    done = bridge(autograder, configure(tmp_path, f"http://127.0.0.1:{closed_port()}"))
    assert done.returncode == 0, done.stderr
    assert note_then_cpu(autograder).startswith("The course's GPU service could not be reached (connection refused)")


def test_a_refusal_falls_back_with_the_services_own_words(autograder, service, tmp_path):
    service.reply("POST /api/v1/uploads", (403, {"error": "s01 is not on the course's roster"}))
    assert bridge(autograder, configure(tmp_path, service.url)).returncode == 0
    assert "refused it (s01 is not on the course's roster)" in note_then_cpu(autograder)


def test_a_job_unfinished_after_wait_seconds_falls_back(autograder, service, tmp_path):
    service.reply("POST /api/v1/uploads", (202, job(17, state="queued", position=9)))
    service.reply("GET /api/v1/jobs/17", (200, job(17, state="queued", position=8)))
    assert bridge(autograder, configure(tmp_path, service.url, wait_seconds=0.1)).returncode == 0
    assert "did not finish grading within" in note_then_cpu(autograder)


def test_a_failed_job_falls_back_with_its_reason(autograder, service, tmp_path):
    service.reply("POST /api/v1/uploads", (202, job(17, state="failed", error="the GPU machine went away")))
    assert bridge(autograder, configure(tmp_path, service.url)).returncode == 0
    assert "could not grade it (the GPU machine went away)" in note_then_cpu(autograder)


def test_without_a_service_in_the_zip_it_grades_on_the_cpu_as_before(autograder, tmp_path):
    assert bridge(autograder, tmp_path / "no-such-service.json").returncode == 0
    assert results(autograder) == CPU_RESULTS


def test_a_failing_cpu_grade_still_leaves_a_valid_results_json_with_the_note(autograder, tmp_path):
    done = bridge(autograder, configure(tmp_path, f"http://127.0.0.1:{closed_port()}"), fallback="exit 3")
    assert done.returncode == 1
    graded = results(autograder)
    assert graded["score"] == 0 and graded["output"].startswith("The course's GPU service could not be reached")
    assert graded["output"].endswith("please tell the course staff.")


def test_run_autograder_runs_the_bridge(autograder, tmp_path):
    done = bridge(autograder, tmp_path / "no-such-service.json",
                  command=["bash", str(REPO / "grader" / "gradescope" / "run_autograder")])
    assert done.returncode == 0, done.stderr
    assert results(autograder) == CPU_RESULTS


def configure_command(tmp_path: Path, service: dict, token: str | None = "zip-token-0123456789"):
    rubric = rubric_with(tmp_path, **service)  # the course's rubric, its [service] values changed
    token_file = tmp_path / "token"
    if token is not None:
        token_file.write_text(token + "\n")
    out = tmp_path / "zip" / "service.json"
    done = subprocess.run([sys.executable, "-m", "grader.gradescope.bridge", "configure", "--token-file",
                           str(token_file), "--out", str(out), "--rubric", str(rubric)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    return done, out


def test_configure_writes_the_zips_service_and_its_token_from_the_rubric(tmp_path):
    done, out = configure_command(tmp_path, {"url": "https://grading.example.edu", "wait_seconds": 600})
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == {"url": "https://grading.example.edu", "token_file": "assignment-token",
                                           "wait_seconds": 600.0}
    assert (out.parent / "assignment-token").read_text().strip() == "zip-token-0123456789"


def test_configure_refuses_a_token_when_the_rubric_names_no_service(tmp_path):
    done, out = configure_command(tmp_path, {"url": ""})
    assert done.returncode == 1 and "names no [service] url" in done.stderr and not out.exists()


def test_configure_refuses_a_missing_token_file(tmp_path):
    done, out = configure_command(tmp_path, {"url": "https://g.example.edu"}, token=None)
    assert done.returncode == 1 and "ASSIGNMENT_TOKEN=" in done.stderr and not out.exists()
