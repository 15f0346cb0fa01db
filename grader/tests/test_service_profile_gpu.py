"""`make profile TASK=... GPU=1` on a GPU (issue 31): the service on this machine's GPU runs Nsight Compute in the
sandbox on the solution and on three planted performance bugs (solution/tests/planted_performance/), sent by the
student's client; each bug's sentence names what the CPU's `make profile` names, and the solution gets none. One of
them goes the whole student way: `make profile TASK=transpose GPU=1` in a copy of starter/ (make submit's pre-flight
and archive, then the client).

Needs a GPU and Nsight Compute whose counters every user may read (skipped otherwise; docs/gpu-runs/ records its
runs). PROFILE_GPU_OUT=DIR keeps each client's output and each job's JSON there."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.run import ncu
from grader.tests.capture_pages import pack
from grader.tests.service_server import REPO, ServiceUnderTest, student_starter

pytestmark = [pytest.mark.gpu]

PLANTED = REPO / "solution" / "tests" / "planted_performance"
SOLUTION = REPO / "solution" / "kernels"
# (name, kernels folder, task, the sentence's words that must be there, or None: no finding)
CASES = [("solution-transpose", SOLUTION, "transpose", None),
         ("solution-dot", SOLUTION, "dot", None),
         ("naive_transpose", PLANTED / "naive_transpose", "transpose", "your global stores use"),
         ("unpadded_tile", PLANTED / "unpadded_tile", "transpose", "your shared-memory accesses take"),
         ("interleaved_reduction", PLANTED / "interleaved_reduction", "dot", "of each warp's lanes take part")]


def _readable_counters() -> bool:
    params = Path("/proc/driver/nvidia/params")
    return params.exists() and "RmProfilingAdminOnly: 0" in params.read_text()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    if ncu.find_ncu() is None or not _readable_counters():
        pytest.skip("Nsight Compute is not installed, or the driver lets only admins read the GPU's counters")
    s = ServiceUnderTest(tmp_path_factory.mktemp("service"), students=[c[0] for c in CASES] + ["make"],
                         gpus=os.environ.get("SERVICE_GPUS", "0"), device="gpu", drain=120)
    s.start(timeout=900)
    yield s
    s.stop()


def keep(name: str, text: str):
    out = os.environ.get("PROFILE_GPU_OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / name).write_text(text)


def config(folder: Path, service) -> None:
    (folder / "service.json").write_text(json.dumps({"url": f"http://127.0.0.1:{service.port}",
                                                    "assignment": "cuda-kernels"}))


@pytest.mark.parametrize("name,folder,task,words", CASES, ids=[c[0] for c in CASES])
def test_the_gpu_profile_names_the_planted_problem_and_nothing_on_the_solution(service, tmp_path, name, folder, task,
                                                                                 words):
    starter = student_starter(tmp_path / "starter", service.port)
    (starter / "submission.tar.gz").write_bytes(pack(folder))
    env = {**os.environ, "HOME": str(tmp_path), "GRADER_TOKEN": service.token(name)}
    done = subprocess.run([sys.executable, "tools/service.py", "profile", "--task", task], cwd=starter, env=env,
                          capture_output=True, text=True, timeout=900)
    keep(f"{name}.txt", done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = service.request("GET", "/api/v1/jobs", service.token(name))[1]["jobs"]
    job = service.job(service.token(name), jobs[-1]["job"])
    keep(f"{name}.json", json.dumps(job, indent=1))
    profile = job["profile"]
    assert profile["status"] == "counted", profile
    declared = set().union(*(ncu.declared_kernels(p.read_text()) for p in folder.glob("*.cu")))
    assert profile["numbers"]["kernels"] and set(profile["numbers"]["kernels"]) <= declared, profile
    if words is None:
        assert "No finding" in done.stdout, done.stdout
    else:
        assert words in done.stdout and f"make profile TASK={task} names the line" in done.stdout, done.stdout


def test_make_profile_gpu_1_goes_the_students_way(service, tmp_path):
    """make submit's pre-flight and archive on this machine (the CPU backend, as make profile chooses), then the
    client: the table from the GPU's counters."""
    starter = tmp_path / "starter"
    shutil.copytree(REPO / "starter", starter, ignore=shutil.ignore_patterns("build", "*.tar.gz", "service.json"))
    shutil.copy(PLANTED / "naive_transpose" / "transpose.cu", starter / "kernels" / "transpose.cu")
    config(starter, service)
    env = {**os.environ, "HOME": str(tmp_path), "GRADER_TOKEN": service.token("make")}
    done = subprocess.run(["make", "-j8", "profile", "TASK=transpose", "GPU=1"], cwd=starter, env=env,
                          capture_output=True, text=True, timeout=900)
    keep("make-profile-gpu.txt", done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Nsight Compute on the course's GPU" in done.stdout and "your global stores use" in done.stdout

