"""`make profile TASK=... GPU=1` through the grading service (issue 31): the real service on loopback with the simulated
GPUs (their Nsight Compute numbers come from the fake kernels' markers, grader/tests/fakes.py), the student's real
client, and the limits of rubric.toml's [service] (profiles_per_hour, in_flight) kept apart from the uploads'."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from grader.run import ncu
from grader.tests.service_server import REPO, ServiceUnderTest, archive, rubric_with, run_client, student_starter

SLOW_STORE = "// fake-ncu: store=8\n"  # the student's stores use 8 times the sectors they need: the solution's 1


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("service")
    s = ServiceUnderTest(tmp, students=["s01", "s02", "s03", "s04"], gpus="0", delay=0.001,
                         rubric=rubric_with(tmp, profiles_per_hour=2))
    s.start()
    yield s
    s.stop()


@pytest.fixture
def starter(tmp_path, service) -> Path:
    return student_starter(tmp_path / "starter", service.port)


def client(starter: Path, *args: str, token: str) -> subprocess.CompletedProcess:
    return run_client(starter, *args, home=starter.parent, token=token)


def ask(service, token: str, task: str, data: bytes, expect: int = 202) -> dict:
    status, body, _ = service.request("POST", f"/api/v1/profiles?task={task}", token, data,
                                      {"Upload-Id": os.urandom(9).hex(), "Content-Type": "application/gzip"})
    assert status == expect, (status, body)
    return body


def one_line(done: subprocess.CompletedProcess, status: int = 1) -> str:
    assert done.returncode == status, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr.strip()


def test_the_client_prints_the_table_beside_the_solution_and_names_what_is_worse(service, starter):
    (starter / "submission.tar.gz").write_bytes(archive(files={"transpose.cu": SLOW_STORE.encode()}))
    done = client(starter, "profile", "--task", "transpose", "--archive", "submission.tar.gz",
                  token=service.token("s01"))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "profile #1 of transpose" in out and "Nsight Compute on the course's GPU" in out, out
    row = next(line for line in out.splitlines() if line.startswith("global stores: sectors used / needed"))
    assert row.split()[-2:] == ["8.0x", "1.0x"], row  # yours, then the solution's
    assert "your global stores use 8.0x the sectors they need where the solution's use 1.0x" in out
    assert "make profile TASK=transpose names the line" in out
    assert "global loads use" not in out  # the loads equal the solution's: no sentence
    assert "This profile counted against the hourly limit." in out
    # the job as the API keeps it: the numbers, the solution's, nothing graded
    jobs = service.request("GET", "/api/v1/jobs", service.token("s01"))[1]["jobs"]
    job = service.job(service.token("s01"), jobs[-1]["job"])
    assert job["kind"] == "profile" and job["task"] == "transpose" and job["result"] is None
    assert job["profile"]["numbers"]["global_store_sectors_per_needed"] == 8.0
    assert job["profile"]["solution"]["global_store_sectors_per_needed"] == 1.0
    # make history lists it apart from the uploads, and the uploads' limit is untouched
    history = client(starter, "history", token=service.token("s01"))
    assert "profile #1 of transpose" in history.stdout, history.stdout
    assert "You can upload now (6 of 6 uploads an hour left" in history.stdout
    assert "You can ask for a profile now (1 of 2 profiles an hour left" in history.stdout
    assert "(job " not in out + history.stdout  # the job id is a field for tools


def test_a_kernel_like_the_solution_gets_no_finding(service, starter):
    (starter / "submission.tar.gz").write_bytes(archive(files={"transpose.cu": b"// fake: ok\n"}))
    done = client(starter, "profile", "--task", "transpose", token=service.token("s02"))
    assert done.returncode == 0, done.stderr
    assert "No finding: each number is within a tenth of the solution's." in done.stdout, done.stdout


def test_profiles_have_their_own_hourly_limit_and_a_failed_count_is_free(service):
    token = service.token("s03")
    data = archive(files={"transpose.cu": b"// fake-ncu: fails\n", "add.cu": b"// fake: ok\n"})
    failed = service.wait(token, ask(service, token, "transpose", data)["job"])
    assert failed["profile"]["status"] == "failed" and not failed["counted"]
    assert "no kernel of yours" in failed["profile"]["message"]
    for _ in range(2):
        service.wait(token, ask(service, token, "add", data)["job"])
    refused = ask(service, token, "add", data, expect=429)
    assert "2 profiles counted in the last hour (the limit); your next profile is possible at" in refused["error"]
    limits = service.request("GET", "/api/v1/limits", token)[1]
    assert limits["profile_refused"] is True and limits["profile_line"] == refused["error"]
    assert limits["profiles"] == ""  # this service profiles
    # uploads to grade are limited apart: one is still taken
    assert service.upload(token, archive())["kind"] == "grade"


def test_bad_profile_requests_get_one_line_and_store_nothing(service, starter):
    token = service.token("s04")
    before = len(service.request("GET", "/api/v1/jobs", token)[1]["jobs"])
    unknown = ask(service, token, "sort", archive(), expect=400)["error"]
    assert "no task 'sort' to profile" in unknown and "transpose" in unknown
    missing = ask(service, token, "dot", archive(files={"transpose.cu": b"// fake: ok\n"}), expect=400)["error"]
    assert missing == "the archive holds no dot.cu: there is nothing of dot to profile"
    assert ask(service, "x" * 40, "dot", archive(), expect=401)["error"]
    assert len(service.request("GET", "/api/v1/jobs", token)[1]["jobs"]) == before
    # the client: no TASK, and a folder without the course's service.json
    assert "usage: make profile TASK=<task> GPU=1" in one_line(client(starter, "check", "--profile", "", token=token), 2)
    (starter / "service.json").unlink()
    said = one_line(client(starter, "profile", "--task", "dot", token=token), 2)
    assert "this course runs no grading service" in said and "make profile TASK=dot counts on your CPU" in said


def test_a_build_that_fails_is_reported_and_does_not_count(service):
    token = service.token("s02")
    job = service.wait(token, ask(service, token, "transpose",
                                  archive(files={"transpose.cu": b"// fake: build-fails\n"}))["job"])
    assert job["state"] == "done" and not job["counted"], job
    assert job["profile"]["status"] == "build_failed" and "longer than its limit" in job["profile"]["message"]


def test_a_service_whose_graders_cannot_profile_refuses_in_one_line(tmp_path):
    """serve --slurm hands batches to the cluster, which runs no profiler (and a GPU machine may lack ncu): the app
    refuses with the profiler's words before anything is stored. The app under uvicorn on loopback, as serve runs
    it, without a cluster."""
    from grader.core.registry import Registry
    from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
    from grader.service import tokens
    from grader.service.app import ServiceConfig
    from grader.store.jobs import Jobs
    from grader.store.store import Store
    from grader.tests.service_server import app_in_thread
    registry = Registry.from_file()
    config = ServiceConfig(tmp_path, load_rubric(Path(DEFAULT_RUBRIC), registry), registry,
                           profiler=lambda: "its jobs are graded in Slurm batches, which do not profile")
    store = Store(tmp_path / "grades.sqlite")
    staff = tokens.issue_one(Jobs(store), "staff", "ta")
    store.close()
    with app_in_thread(config) as port:
        service = ServiceUnderTest.__new__(ServiceUnderTest)
        service.port = port
        status, body, _ = service.request("POST", "/api/v1/profiles?task=transpose", staff, archive(),
                                          {"Upload-Id": "abcdefgh12", "Student": "s01"})
        assert status == 503 and "Slurm batches, which do not profile" in body["error"], body
        assert "make profile TASK=transpose counts on your machine's CPU" in body["error"]
        assert service.request("GET", "/api/v1/jobs?student=s01", staff)[1]["jobs"] == []
        # what make profile GPU=1 asks before it builds: the same line, without sending anything
        status, limits, _ = service.request("GET", "/api/v1/limits?student=s01", staff)
        assert status == 200 and limits["profiles"] == "its jobs are graded in Slurm batches, which do not profile"
        said = client_module().CANNOT_PROFILE.format(why=limits["profiles"], task="transpose")
        assert said == body["error"]


def client_module():
    from grader.tests.canned_service import load_client
    return load_client()


def test_ncu_csv_is_read_into_the_students_numbers_and_the_harness_kernels_are_left_out():
    """ncu's raw page as the H200 wrote it for the solution's transpose (docs/gpu-runs/raw/2026-11-28-issue-31),
    cut to the columns read: the harness's own kernels are not the student's."""
    head = ["ID", "Kernel Name", *ncu.METRICS]
    units = ["", "", *["" for _ in ncu.METRICS]]

    def row(kernel: str, **values) -> list[str]:
        return ["0", kernel, *[values.get(m.replace(".", "_"), "0") for m in ncu.METRICS]]
    rows = [head, units,
            row("void (anonymous namespace)::generate_kernel<float>(float *, unsigned long)",
                l1tex__t_requests_pipe_lsu_mem_global_op_st_sum="9"),
            row("void <unnamed>::transpose_vector<float, 64, 16>(const T1 *, T1 *, int, int)",
                l1tex__t_requests_pipe_lsu_mem_global_op_ld_sum="8,192",
                l1tex__t_sectors_pipe_lsu_mem_global_op_ld_sum="108,462",
                l1tex__t_requests_pipe_lsu_mem_global_op_st_sum="16,384",
                l1tex__t_sectors_pipe_lsu_mem_global_op_st_sum="65,536",
                sm__sass_data_bytes_mem_global_op_ld_sum="1,048,576", sm__sass_data_bytes_mem_global_op_st_sum="524,288",
                launch__registers_per_thread="40", sm__maximum_warps_per_active_cycle_pct="75",
                smsp__inst_executed_pipe_lsu_sum="24,576", smsp__thread_inst_executed_pipe_lsu_pred_on_sum="393,216")]
    text = "==PROF== Connected to process 7\n" + "\n".join(",".join(f'"{c}"' for c in r) for r in rows) + "\n"
    assert [launch["kernel"] for launch in ncu.own_launches(ncu.launches(text))] == ["transpose_vector"]
    found = ncu.own_launches(ncu.launches(text), frozenset({"transpose_vector"}))
    assert [launch["kernel"] for launch in found] == ["transpose_vector"]
    numbers = ncu.task_numbers(found)
    assert numbers["global_load_sectors_per_request"] == 13.24 and numbers["global_store_sectors_per_request"] == 4.0
    # needed: a sector per 32 bytes asked for, at least one per request (1 MiB of loads: 32768 sectors)
    assert numbers["global_load_sectors_per_needed"] == 3.31 and numbers["global_store_sectors_per_needed"] == 4.0
    assert numbers["shared_passes_per_needed"] is None  # no shared memory
    assert numbers["registers"] == 40 and numbers["occupancy_percent"] == 75 and numbers["active_lanes"] == 0.5
    assert "generate_kernel" in ncu.harness_kernels() and "transpose_vector" not in ncu.harness_kernels()
    # what is not ncu's raw page gives no launch, and garbage no traceback
    assert ncu.launches("==ERROR== The application returned an error code (1).\n") == []
    assert ncu.launches('"Kernel Name","x"\n"u"\n"k","not a number"\n')[0]["counts"] == {}


def test_the_kernels_a_task_file_declares_are_read_from_its_source():
    """The solution's dot kernel shares its name with one of the harness's own (dot_kernel): the profile keeps the
    launches of the kernels the student's file declares, whatever their names."""
    solution = REPO / "solution" / "kernels"
    assert "dot_kernel" in ncu.declared_kernels((solution / "dot.cu").read_text())
    assert "dot_kernel" in ncu.harness_kernels()
    assert ncu.declared_kernels((solution / "transpose.cu").read_text()) >= {"transpose_vector"}
    text = ("// __global__ void commented(int*)\n/* __global__ void also_commented() */\n"
            "template <int N> __global__ void __launch_bounds__(256, 2) tiled(float* a) {}\n"
            "__global__ static void\nplain (int n) {}\n")
    assert ncu.declared_kernels(text) == {"tiled", "plain"}
