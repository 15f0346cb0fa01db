"""`grade --device cpu` end to end, what is the CPU backend's own: the sample class (data/sample-submissions/, plus
one file that uses inline PTX) graded through the real command line, sandbox and builds (cpu_class.py, once per
test run); then one Slurm shard of the same on the same build, Slurm's tools replaced.

The verdicts every backend owes the sample class are the Backend contract's (test_backend_contract.py); here, what
the CPU backend says in its own way (data/README.md has the GPU's): an out-of-bounds read that a GPU only shows
as wrong numbers is an error that names the array and index; shared memory starts as NaN, so a missing barrier
reads NaN; a shape over its per-case budget is left to a GPU; nothing is timed.
"""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from grader.backends import gpu
from grader.grading.cases import AGAIN_STILL
from grader.scoring.score import NOT_MEASURED
from grader.slurm import scheduler
from grader.slurm.batch import batches
from grader.slurm.shard import run_shard
from grader.slurm.submit import SlurmOptions, submit
from grader.tests.conftest import REPO, cases_of, opened, small_rubric_text, texts_a_student_reads
from grader.tests.cpu_class import CASE_LIMIT, MATMUL, OVER_BUDGET, PTX_STUDENT


@pytest.fixture(scope="module")
def graded(cpu_sample_class):
    """The class graded by `python3 -m grader grade --device cpu`, once per test run (cpu_class.py)."""
    return cpu_sample_class


def statuses(results: Path, student: str, task: str) -> dict[str, str]:
    rows = cases_of(results, student, task=task)
    return dict(zip(rows["shape"], rows["status"]))


def scores_of(results: Path, student: str) -> pd.DataFrame:
    with opened(results) as store:
        sid = int(store.submissions(student)["id"].iloc[-1])
        return store.scores([sid]).set_index("task")


def test_the_k_guard_off_by_one_fails_where_k_leaves_a_partial_tile_as_a_named_out_of_bounds_read(graded):
    got = statuses(graded.results, "s03-tiled-off-by-one", "matmul_tiled")
    assert got == {"1x1x1": "error", "37x41x43": "error", "96x160x96": "ok"}
    rows = cases_of(graded.results, "s03-tiled-off-by-one", task="matmul_tiled")
    message = rows[rows["shape"] == "37x41x43"]["message"].iloc[0]
    assert "the CPU backend saw: kernel tiled_kernel" in message and "but b has 1763 elements" in message


def test_the_missing_barrier_reads_shared_memory_nothing_wrote_on_every_shape(graded):
    assert set(statuses(graded.results, "s04-race", "matmul_tiled").values()) == {"wrong"}
    rows = cases_of(graded.results, "s04-race", task="matmul_tiled")
    assert rows["message"].str.contains("got NaN").all()


def test_the_cpus_race_checker_names_the_missing_barrier_and_the_good_submission_is_clean(graded):
    """compute-sanitizer's racecheck has a stand-in on the CPU: the race checker reports the tile read before every
    thread of the block wrote it, with both threads and lines; s08-fast's checks all come back clean."""
    with opened(graded.results) as store:
        subs = store.submissions().set_index("student")
        tools = store.sanitizer_runs_for()
    race = tools[(tools["submission_id"] == subs.loc["s04-race", "id"]) & (tools["task"] == "matmul_tiled")
                 & (tools["tool"] == "racecheck")].iloc[0]
    assert race["status"] == "errors" and race["checker"] == "cpu", race.to_dict()
    assert re.search(r"data race on [ab]_tile\[\d+\]\[\d+\] \(shared memory\)", race["report"]), race["report"]
    assert "matmul_tiled.cu:" in race["report"] and "/tmp/" not in race["report"]
    good = tools[tools["submission_id"] == subs.loc["s08-fast", "id"]]
    assert set(good["status"]) == {"clean"} and len(good) >= 2 * 5, good[["task", "tool", "status"]]


def test_the_hang_costs_one_case_limit_and_skips_the_shape_over_the_budget_too(graded):
    assert statuses(graded.results, "s05-hang", "fill") == {"1x1": "timeout", "37x211": "skipped",
                                                           OVER_BUDGET: "skipped"}
    hang = cases_of(graded.results, "s05-hang", task="fill").iloc[0]
    assert not hang["message"].endswith(AGAIN_STILL)  # CPU time, not the machine's load: not run again
    with opened(graded.results) as store:
        seconds = float(store.submissions("s05-hang")["seconds"].iloc[0])
    assert CASE_LIMIT <= seconds < CASE_LIMIT + 20


def test_the_far_out_of_bounds_write_is_an_error_in_every_case_that_names_what_it_touched(graded):
    assert set(statuses(graded.results, "s06-crash", "add").values()) == {"error"}
    rows = cases_of(graded.results, "s06-crash", task="add")
    assert rows["message"].str.contains("an illegal memory access was encountered").all()
    assert rows["message"].str.contains("which is not device memory").all()


def test_the_syntax_error_quotes_gccs_line_and_column(graded):
    rows = cases_of(graded.results, "s07-compile-error", task="transpose")
    assert rows["message"].str.startswith("transpose.cu does not compile: transpose.cu:9:5: error:").all()


def test_a_shape_over_the_cpus_budget_is_gpu_only_and_left_out_of_the_score(graded):
    """The harness answers it without running it; the task's points are the share of the cases that ran, and
    the feedback names the shape it left to a GPU."""
    (row,) = cases_of(graded.results, "s08-fast", task="fill", shape=OVER_BUDGET).itertuples()
    assert row.status == "gpu_only"
    assert row.message == ("GPU only: 2048x2048 is 4,194,304 elements, over the CPU backend's per-case budget of "
                           "2,097,152; not run on the CPU (a GPU run checks it)")
    fill = scores_of(graded.results, "s08-fast").loc["fill"]
    assert (fill["correctness"], fill["cases_passed"], fill["cases_total"]) == (4.0, 2, 2)
    assert fill["note"] == NOT_MEASURED + "; 1 of 3 cases GPU only (over the CPU's per-case budget)"
    page = (graded.results / "feedback" / "s08-fast.md").read_text()
    assert "| fill | 4.0 / 4 | not timed | passed 2/2 · 1 GPU only · performance not timed on this run |" in page
    assert "Not run on the CPU: int32 at 2048x2048 (1 case), over the CPU backend's per-case budget" in page


def test_a_file_with_inline_ptx_needs_a_gpu_and_costs_no_other_task(graded):
    fast = cases_of(graded.results, PTX_STUDENT, task="matmul_fast")
    assert set(fast["status"]) == {"needs_gpu"}
    assert set(fast["message"]) == {f"needs a GPU: uses inline PTX at matmul_fast.cu:{graded.ptx_line}"}
    rows = cases_of(graded.results, PTX_STUDENT)
    assert set(rows[(rows["task"] != "matmul_fast") & (rows["shape"] != OVER_BUDGET)]["status"]) == {"ok"}
    assert scores_of(graded.results, PTX_STUDENT).loc["matmul_fast", "note"].startswith(
        "not graded on the CPU: needs a GPU: uses inline PTX")
    page = (graded.results / "feedback" / f"{PTX_STUDENT}.md").read_text()
    assert "| matmul_fast | 0.0 / 10 | not timed | needs a GPU" in page


def test_nothing_is_timed_the_cpus_own_checks_run_and_the_run_records_the_cpu(graded):
    with opened(graded.results) as store:
        tools = store.sanitizer_runs_for()
        assert store.timed_cases().empty and not tools.empty and set(tools["checker"]) == {"cpu"}
        assert set(tools["tool"]) == {"memcheck", "racecheck"} and "unavailable" not in set(tools["status"])
        run = store.latest_run()
        subs = store.submissions()
    (device,) = json.loads(run["devices"])
    assert device["backend"] == "cpu" and device["gpu"] == "cpu" and device["cores"] >= 1
    assert device["host"] and device["cpu"] and device["compiler"].split()[0] in ("g++", "c++", "clang")
    assert device["name"].startswith("CPU backend (cudacpu)")
    assert json.loads(run["limits"]) == {} and run["harness_version"].endswith("+cpu")
    assert set(subs["harness_version"]) == {run["harness_version"]}


def test_the_reports_say_the_performance_points_were_not_measured(graded):
    assert "performance not measured for 9 of 9 submissions" in graded.out
    grades = pd.read_csv(graded.results / "grades.csv")
    assert set(grades["matmul_fast_performance"]) == {"not timed"}
    page = (graded.results / "feedback" / "s08-fast.md").read_text()
    assert "**Correctness only.** Not timed on this run: graded on the CPU backend" in page
    assert "| add | 4.0 / 4 | not timed | passed 2/2 · performance not timed on this run |" in page
    assert "## Performance" not in page


def test_grading_writes_no_canvas_csv_and_export_refuses_it_without_correctness_only(graded, tmp_path):
    """A gradebook would take 48 of 100 for a correct submission as its grade: canvas.csv is not written, and
    `export` says why in one line unless told --correctness-only."""
    assert not (graded.results / "canvas.csv").exists()
    assert "canvas.csv not written: performance was not measured for 9 of 9 students" in graded.out
    export = [sys.executable, "-m", "grader", "export", "--results", str(graded.results), "--rubric",
              str(graded.rubric), "--out", str(tmp_path / "canvas.csv")]
    refused = subprocess.run(export, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert refused.stderr.rstrip().endswith("or export the correctness points as they are with --correctness-only")
    written = subprocess.run(export + ["--correctness-only"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert written.returncode == 0 and "warning: correctness only (--correctness-only)" in written.stderr
    canvas = pd.read_csv(tmp_path / "canvas.csv").set_index("SIS Login ID")
    assert canvas.loc["s08-fast", graded.policy.title] == sum(p.correctness_points for p in graded.policy.tasks)


def test_the_pages_say_what_was_not_measured_and_show_correct_tasks_as_correct(graded, tmp_path):
    from grader.reports.leaderboard import PublishOptions, publish
    from grader.reports.leaderboard.board import CORRECT_NOT_TIMED
    done = publish(PublishOptions(graded.results, out=tmp_path / "board", salt_file=tmp_path / "salt"), graded.policy)
    html = done.html.read_text()
    assert "nothing was timed and nobody is ranked yet" in html and "still has something to fix" not in html
    assert list(pd.read_csv(done.csv)["status"]).count(CORRECT_NOT_TIMED) == 1  # s08-fast (s09's file needs a GPU)
    page = (graded.results / "feedback" / "s08-fast.html").read_text()
    results = re.findall(r'<td class="(\w+)">(passed [^<]*)</td>', page)
    assert len(results) == len(graded.policy.tasks) and {c for c, _ in results} == {"ok"}, results
    overview = (graded.results / "overview.html").read_text()
    row = re.search(rf"<tr><td>{OVER_BUDGET}</td>(.*?)</tr>", overview[overview.index('id="rates-fill"'):]).group(1)
    assert "left to a GPU (" in row and " low" not in row and "0/" not in row  # s05's hang skipped it: not a 0/1


def test_a_check_in_the_students_code_names_their_file_as_their_checkout_does(graded):
    """The harness ran the student's files from the grader's work folder, so a CUDA_CHECK's `__FILE__` named
    it there: what is stored and written says `kernels/add.cu:9`, as the student's own `make test` does (and no
    temporary folder at all; the contract checks the work folder on every backend)."""
    texts = texts_a_student_reads(graded.results)
    assert any(re.search(r"(^|\s)kernels/\w+\.cu:\d+: ", text) for text in texts)
    leaked = [text for text in texts if "/tmp/" in text]
    assert not leaked, leaked[:3]


def test_gradescope_on_a_runner_without_a_gpu_grades_correctness_on_the_cpu(graded, tmp_path, cpu_grading_work):
    """Gradescope's containers have no GPU: run_autograder's `gradescope` command (--device auto, its default)
    grades on the CPU backend, on the session's build, and results.json says the performance was not timed."""
    why = gpu.gpu_missing()
    if not why:
        pytest.skip("this machine has a GPU: --device auto grades on it (the GPU suite grades Gradescope there)")
    out = tmp_path / "autograder-results"
    done = subprocess.run([sys.executable, "-m", "grader", "gradescope", "--submission", str(graded.subs / "s08-fast"),
                           "--results-dir", str(out), "--metadata", str(tmp_path / "none.json"), "--work",
                           str(cpu_grading_work), "--rubric", str(graded.rubric)], cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"--device auto: {why}: grading correctness only, on the CPU backend" in done.stderr
    result = json.loads((out / "results.json").read_text())
    assert result["score"] == sum(p.correctness_points for p in graded.policy.tasks)
    assert result["output"].startswith("Correctness only. Not timed on this run: graded on the CPU backend")
    fill = next(t for t in result["tests"] if t["name"] == "fill: correctness")
    assert fill["output"].startswith("**passed 2/2 · 1 GPU only** · performance not timed on this run")


# --- a busy machine: the correct submission graded on one core that two busy loops share -------------------------

STUDENT = "busy-s08-fast"  # (its own name: its build folder in the shared work folder is found by it)
BUSY_SHAPE, BUSY_LIMIT = "512x512x512", 4  # about 1-2 s of CPU time for matmul_tiled: 3-6 s of wall on a third of a core


def test_a_correct_submission_graded_on_a_busy_machine_keeps_every_point(graded, tmp_path, cpu_grading_work):
    """make demo on a loaded machine once called the sample class's correct submission a hang (a case that passes
    in 3.6 s alone ran out of its 20 s). Here `grade` and everything it starts share one core with two busy loops:
    the matmul_tiled case takes longer than its limit in wall-clock time (measured below, with the same build),
    and still passes, as on the CPU backend a case's limit counts the CPU time it got."""
    core = min(os.sched_getaffinity(0))
    pin = lambda: os.sched_setaffinity(0, {core})  # noqa: E731
    subs = tmp_path / "subs"
    shutil.copytree(graded.subs / "s08-fast", subs / STUDENT)
    rubric_path = tmp_path / "rubric.toml"
    tiny = {t.id: [t.shapes[0]] for t in graded.policy.tasks}
    rubric_path.write_text(small_rubric_text(graded.policy, shapes={**tiny, "matmul_tiled": [BUSY_SHAPE]},
                                             limits={"build": 600, "case": BUSY_LIMIT, "submission": 600}))
    results = tmp_path / "results"
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin) for _ in range(2)]
    try:
        done = subprocess.run([sys.executable, "-m", "grader", "grade", str(subs), "--device", "cpu", "--rubric",
                               str(rubric_path), "--results", str(results), "--work", str(cpu_grading_work),
                               "--seed", "7", "--no-progress"], cwd=REPO, capture_output=True, text=True,
                              timeout=1800, preexec_fn=pin)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        (harness,) = cpu_grading_work.glob(f"build/submission-{STUDENT}-*/harness")  # the build it was graded with
        dtype = graded.policy.task("matmul_tiled").dtypes[0]
        start, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        alone = subprocess.run([str(harness), "--task", "matmul_tiled", "--dtype", dtype, "--shape", BUSY_SHAPE,
                                "--seed", "7", "--check-only", "--check-runs", "2", "--no-limits"],  # as graded
                               cwd=REPO / "starter", capture_output=True, text=True, timeout=600, preexec_fn=pin)
        wall, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    assert alone.returncode == 0, alone.stdout[-2000:] + alone.stderr[-2000:]
    print(f"\nmatmul_tiled {dtype} {BUSY_SHAPE} on a busy core: {wall:.1f} s of wall clock, {cpu:.1f} s of CPU "
          f"(limit {BUSY_LIMIT} s)", file=sys.stderr)
    assert wall > BUSY_LIMIT, "the load did not push the case past its wall-clock limit: the test shows nothing"
    rows = cases_of(results, STUDENT)
    assert set(rows[rows["status"] != "gpu_only"]["status"]) == {"ok"}, rows[["task", "shape", "status", "message"]]
    scores = scores_of(results, STUDENT)
    assert scores["correctness"].sum() == sum(p.correctness_points for p in graded.policy.tasks)


# --- the time budget: a submission that sleeps just under the case limit in every case -------------------------

SLEEPER = "sleeps-every-case"  # the hostile corpus's entry: each call of fill, add and transpose waits 1.5 s first
BUDGET_EXTRA = 8
BUDGET_SHAPES = ["1x1", "1x1000", "1000x1", "37x211", "211x37", "3x700"]


def test_a_submission_sleeping_in_every_case_is_cut_off_at_its_time_budget_on_the_cpu(graded, tmp_path,
                                                                                       cpu_grading_work):
    """Each case of the sleeper takes about 3 s (two calls), under the 5 s case limit: without a budget it would hold
    the worker for its 18 cases x 3 s. Its budget, 20 x the solution's CPU time for the same requests + 8 s, stops
    it within seconds of those 8; the feedback names the case, and the submission graded after it is whole."""
    from grader.tests.hostile_entries import hand_in, load_corpus
    (entry,) = [e for e in load_corpus() if e.name == SLEEPER]
    subs = tmp_path / "subs"
    subs.mkdir()
    hand_in(entry, subs, "a-sleeper")
    shutil.copytree(graded.subs / "s08-fast", subs / "b-after")
    rubric_path = tmp_path / "rubric.toml"
    rubric_path.write_text(small_rubric_text(graded.policy, shapes=dict.fromkeys(("fill", "add", "transpose"),
                                                                                  BUDGET_SHAPES),
                                             limits={"build": 300, "case": CASE_LIMIT, "submission": 300,
                                                     "time_budget_extra": BUDGET_EXTRA}))
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(subs), "--device", "cpu", "--rubric",
                           str(rubric_path), "--results", str(results), "--work", str(cpu_grading_work), "--seed", "7",
                           "--no-progress"], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = cases_of(results, "a-sleeper")
    ran = rows[rows["task"].isin(["fill", "add", "transpose"])]
    statuses = list(ran["status"])
    assert statuses[0] == "ok" and "out_of_budget" in statuses
    cut = statuses.index("out_of_budget")
    assert set(statuses[:cut]) == {"ok"} and set(statuses[cut:]) == {"out_of_budget"}
    stopped = ran.iloc[cut]
    where = f"{stopped['task']} {stopped['dtype']} {stopped['shape']}"
    assert stopped["message"].startswith("stopped: your code had used up its time budget here")
    assert all(m.startswith(f"not run: your code had used up this submission's time budget at {where} (")
               for m in ran["message"].iloc[cut + 1:])
    with opened(results) as store:
        seconds = float(store.submissions("a-sleeper")["seconds"].iloc[0])
    cases = len(ran)
    print(f"\nthe sleeper: {cut} cases ran, cut at {where}, graded in {seconds:.1f} s ({cases} cases x "
          f"{CASE_LIMIT} s = {cases * CASE_LIMIT} s)", file=sys.stderr)
    assert seconds < BUDGET_EXTRA + 2 * CASE_LIMIT < cases * CASE_LIMIT / 3
    page = (results / "feedback" / "a-sleeper.md").read_text()
    assert f"not run: your code had used up this submission's time budget at {where}" in page
    assert "over its time budget" in page
    after = cases_of(results, "b-after")
    assert set(after[after["status"] != "gpu_only"]["status"]) == {"ok"}


# --- the same backend through a Slurm batch: submit, then one array task (run_shard), Slurm's tools replaced ------


def test_a_slurm_batch_on_the_cpu_asks_for_no_gpu_and_its_shard_grades_on_the_cached_build(graded, monkeypatch,
                                                                                             tmp_path):
    submitted = []
    monkeypatch.setattr(scheduler, "sbatch", lambda options, script: submitted.append(list(options)) or
                        str(100 + len(submitted)))
    monkeypatch.setattr(scheduler, "queued", lambda jobs: {})
    monkeypatch.setattr(scheduler, "ended", lambda jobs: {})
    monkeypatch.setattr(scheduler, "run", lambda cmd, **kw: None)
    monkeypatch.setattr(scheduler, "check_partition", lambda partition: ["grading"])
    root = Path(os.environ["GRADER_BUILD_CACHE"])  # the entry the class run was graded on
    subs = tmp_path / "slurm-subs"
    for student in ("s02-naive-only", PTX_STUDENT):
        shutil.copytree(graded.subs / student, subs / student)
    done = submit(subs, tmp_path / "slurm-results", SlurmOptions(shard_size=2, cache=root), device="cpu",
                  arch=None, rubric_path=graded.rubric, seed=7)
    assert not done.cache_built and done.shards == 1
    array, merge = submitted
    assert not any(a.startswith("--gres") for a in array + merge)
    manifest = batches(tmp_path / "slurm-results")[-1]
    assert (manifest.device, manifest.arch) == ("cpu", "cpu")
    run_shard(manifest.path, 0, work=tmp_path / "shard-work", progress_seconds=60)
    shard = manifest.shard_folder(0)
    assert statuses(shard, PTX_STUDENT, "matmul_fast") == {s: "needs_gpu" for s in MATMUL}
    assert set(statuses(shard, "s02-naive-only", "matmul_naive").values()) == {"ok"}
    with opened(shard) as store:
        assert json.loads(store.latest_run()["devices"])[0]["backend"] == "cpu"
