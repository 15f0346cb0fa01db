"""The service's two clients against the real service on loopback: the student's `tools/service.py` (what
`make upload` and `make history` run) from a copy of the tarball's starter folder, and Gradescope's bridge from
a fake /autograder tree. Both get what the service stored, the verdicts `grade` gives (test_service_limits.py)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from grader.tests.service_server import ServiceUnderTest, archive, run_client, student_starter
from grader.tests.test_gradescope_bridge import autograder_tree, bridge, configure, results


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    s = ServiceUnderTest(tmp_path_factory.mktemp("service"), students=["s01", "s02"], gpus="0", delay=0.001)
    s.start()
    yield s
    s.stop()


@pytest.fixture
def starter(tmp_path, service) -> Path:
    return student_starter(tmp_path / "starter", service.port)


client = run_client


def test_make_upload_shows_the_result_the_service_stored_and_make_history_lists_it(service, starter, tmp_path):
    home = tmp_path / "home"
    assert client(starter, "login", service.token("s01"), home=home).returncode == 0
    (starter / "submission.tar.gz").write_bytes(archive(files={"fill.cu": b"// fake: ok speed=1.5\n",
                                                               "add.cu": b"// fake: wrong\n"}))
    done = client(starter, "upload", "--archive", "submission.tar.gz", home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    status, jobs, _ = service.request("GET", "/api/v1/jobs", service.token("s01"))
    last = service.job(service.token("s01"), jobs["jobs"][-1]["job"])
    assert last["state"] == "done"
    total, name = last["result"]["total"], last["name"]
    assert name == f"upload #{last['attempt']}"
    assert f"{name}: graded, {total:.1f} / 100 points" in done.stdout, done.stdout
    assert "wrong" in done.stdout.lower()  # the condensed feedback says what failed
    # the feedback as the page has it, for a terminal: its points in the page's format, no Markdown left
    for task in last["result"]["tasks"]:
        assert f"\n{task['task']}: {task['points']:.1f} / {task['max']:.0f}\n" in done.stdout, task
    assert "**" not in done.stdout and "##" not in done.stdout and "|---" not in done.stdout
    assert not re.search(r"\bjob \d", done.stdout)  # the job id is a field for tools, not the upload's name
    history = client(starter, "history", home=home)
    assert history.returncode == 0, history.stdout + history.stderr
    assert re.search(rf"^{name}\s.*\s{total:.1f} / 100\s+yes$", history.stdout, re.M), history.stdout
    assert "You can upload now (" in history.stdout and not re.search(r"\bjob \d", history.stdout)


def test_a_wrong_token_is_refused_by_make_login_and_kept_nowhere(service, starter, tmp_path):
    home = tmp_path / "home"
    done = client(starter, "login", "gs_" + "y" * 43, home=home)
    assert done.returncode == 1 and "logged in" not in done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == ["make login: this token is not one the service knows: check it, or ask "
                                                "the course staff for yours: this token was not kept"]
    assert not (home / ".config" / "cuda-kernels" / "token").exists()
    (starter / "submission.tar.gz").write_bytes(archive())
    done = client(starter, "upload", "--archive", "submission.tar.gz", home=home, token="gs_" + "y" * 43)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "not one the service knows" in done.stderr and "Traceback" not in done.stderr


def test_while_serve_prepares_the_client_says_it_is_starting_in_one_line(tmp_path):
    """`serve` answers at once while it builds the solution: 503 with "state": "preparing" at every address. The
    app under uvicorn on loopback, as serve runs it, still preparing; the student's real client."""
    from grader.core.registry import Registry
    from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
    from grader.service.app import ServiceConfig
    from grader.tests.service_server import app_in_thread
    registry = Registry.from_file()
    config = ServiceConfig(tmp_path, load_rubric(Path(DEFAULT_RUBRIC), registry), registry,
                           preparing=lambda: "building the solution")
    with app_in_thread(config) as port:
        starter = student_starter(tmp_path / "starter", port)
        token = "gs_" + "z" * 43
        for args, said in ((["check"], "make upload"), (["check", "--profile", "dot"], "make profile GPU=1"),
                           (["history"], "make history")):
            done = client(starter, *args, home=tmp_path, token=token)
            assert done.returncode == 1 and done.stderr.splitlines() == [
                f"{said}: the grading service is starting: try again in a few minutes"], done.stderr
        login = client(starter, "login", token, home=tmp_path)
        assert login.returncode == 0, login.stderr
        assert login.stdout.startswith("logged in, unchecked: the grading service is still starting, so your token "
                                       "could not be checked"), login.stdout


def test_the_gradescope_bridge_writes_the_services_result(service, tmp_path):
    root = autograder_tree(tmp_path / "autograder", "s02", "2026-11-20T23:59:59.123456-08:00",
                           {name: "// fake: ok speed=1.1\n" for name in ("fill.cu", "add.cu", "dot.cu")})
    config = configure(tmp_path / "zip", f"http://127.0.0.1:{service.port}", token=service.assignment)
    done = bridge(root, config, fallback="exit 3")
    assert done.returncode == 0, done.stdout + done.stderr
    written = results(root)
    status, jobs, _ = service.request("GET", "/api/v1/jobs?student=s02", service.staff)
    job = jobs["jobs"][-1]
    assert job["received"] == "2026-11-21T07:59:59+00:00"  # Gradescope's time, not the service's
    status, stored, _ = service.request("GET", f"/api/v1/jobs/{job['job']}/gradescope", service.staff)
    assert status == 200 and written == stored
    assert {t["name"] for t in written["tests"]} >= {"fill: correctness", "add: correctness", "dot: correctness"}
