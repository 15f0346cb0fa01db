"""Every command README.md shows in its code blocks, run as written from a fresh clone of this working tree on a
machine without a GPU; and the student tarball's README.md's, with README.md's own student commands, in the
tarball that clone's `make dist` writes, extracted, with the CUDA toolkit hidden (test_dist.py's without_cuda).

Each command is classified in COMMANDS: it runs and must succeed; it runs and must fail as documented (every
task starts as a stub, so `make test` fails; a gradebook export refuses a class graded without a GPU, naming
the flag that writes it anyway); or it is not run, for the reason given (it needs a GPU, a Slurm cluster, a
web host). A command nobody has classified fails the test until it is. The documents' placeholders
(path/to/submissions, ID, ...) get the values of PLACEHOLDERS.

The commands share one fresh clone and one CPU grading of the sample class: `make demo` grades it into
results/demo, and the grading block's store starts as a copy of that one, with the same work folder (the
grader's build of the harness and the solution), so `make grade` finds every submission graded already and
builds nothing again; the Canvas download holds one student, and `--student` regrades one. `make bench && make
bench-reference` runs on the grading GPU only: in its place the clone gets a synthetic record stamped as
today's solution (synthetic_bench.py), which `make handout` and `make dist` read whatever record is committed.

Time: 5 min 11 s of wall clock (3 min 32 s of CPU) on this project's 2-core development machine, shared with
other work (2026-11-27): make demo 149 s (the clone's .venv, then the grading), the tarball's first make test
100 s (its CPU build, now made once in a run with test_dist.py's), everything else 1 min. Each command's time is
printed (pytest -s shows them).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from conftest import ROOT
from synthetic_bench import write_synthetic_record
from test_dist import made_without_cuda, without_cuda

from grader.backends import gpu
from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from grader.run.sandbox import ResourceLimits, Sandbox, SandboxError, find_bwrap
from grader.tests import canvas_class
from grader.tests.conftest import sandbox_unavailable
from release.dist import render_readme

README = "README.md"
TARBALL_README = "the tarball's README.md"
STUDENTS = "For students"  # README.md's section whose commands a student runs in the tarball


@dataclass(frozen=True)
class Command:
    doc: str  # README or TARBALL_README
    section: str  # the heading it is under
    cwd: str  # where it runs, relative to its block's start (a `cd` line moves it)
    text: str  # as written, without its comment

    @property
    def in_tarball(self) -> bool:
        return self.doc == TARBALL_README or self.section == STUDENTS


def commands(markdown: str, doc: str) -> list[Command]:
    """The shell commands of a Markdown page's untagged (or sh/bash) code blocks, in order."""
    found, section, block, cwd = [], "", None, "."
    for line in markdown.splitlines():
        if line.startswith("```"):
            block = None if block is not None else line.strip("`").strip() in ("", "sh", "bash", "shell")
            cwd = "."
            continue
        if block is None:
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            continue
        text = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not block or not text:
            continue
        if text.startswith("cd "):
            cwd = str(PurePosixPath(cwd) / text[3:].strip())
            continue
        found.append(Command(doc, section, cwd, text))
    return found


# --- what each command is -------------------------------------------------------------------------------------

RUNS, FAILS, NOT_RUN = "runs", "fails as documented", "not run"


@dataclass(frozen=True)
class Verdict:
    kind: str
    why: str
    says: str = ""  # FAILS: a regular expression its output must match


STUBS_FAIL = "make test fails until every task passes, and every task starts as a stub"
NOT_MEASURED = ("a class graded without a GPU has no performance points: a gradebook export refuses in one line, "
                "naming the flag that writes the correctness points anyway")
# Each command, by a regular expression its text must match whole.
COMMANDS: list[tuple[str, Verdict]] = [
    # README.md, top
    (r"make demo", Verdict(RUNS, "grades the sample class on the CPU backend and publishes its pages")),
    (r"make check", Verdict(NOT_RUN, "the project's own tests, which run this one")),
    # students, in the tarball without CUDA
    (r"make test", Verdict(FAILS, STUBS_FAIL, r"(?m)^0/\d+ tasks pass; not implemented yet: ")),
    (r"make test TASK=\w+", Verdict(FAILS, STUBS_FAIL, r"(?m)^0/1 tasks pass; not implemented yet: \w+$")),
    (r"make bench( TASK=\w+)?", Verdict(NOT_RUN, "times kernels: needs a GPU (without one it says so in one line, "
                                                 "test_dist.py)")),
    (r"make (memcheck|racecheck) TASK=\w+", Verdict(FAILS, "the CPU backend's checks on the stored cases, which "
                                                            "fail while the task is a stub",
                                                     r"(?m)^\d+ cases: 0 ok, 0 wrong, \d+ not implemented, 0 errors$")),
    (r"make resources TASK=\w+", Verdict(NOT_RUN, "asks the CUDA compiler, which is hidden here (without it it says "
                                                  "so in one line, test_dist.py)")),
    (r"make profile TASK=\w+", Verdict(FAILS, "counts a kernel's accesses on the CPU, which needs the task done: on "
                                             "a stub it says so in one line",
                                      r"make profile: \w+ is not implemented yet: nothing to profile")),
    (r"make profile TASK=\w+ GPU=1", Verdict(FAILS, "asks the course's grading service for Nsight Compute, and the "
                                                   "tarball names none: one line says the CPU counts instead",
                                             r"this course runs no grading service, which make profile GPU=1 asks "
                                             r"for Nsight Compute's counters: make profile TASK=\w+ counts on your CPU")),
    (r"make submit", Verdict(RUNS, "packs the stubs, warning that each is untouched")),
    (r"make precheck", Verdict(RUNS, "the grader's source rules")),
    (r"make (upload|history|login TOKEN=\S+)", Verdict(FAILS, "the tarball names no grading service (the rubric's "
                                                            "[service] url is empty): one line says where to hand in",
                                                    r"this course runs no grading service: hand in submission\.tar\.gz")),
    # instructors: the handout
    (r"make bench && make bench-reference", Verdict(NOT_RUN, "measures the solution on the grading GPU; the clone "
                                                             "gets a synthetic record in its place")),
    (r"git add starter/bench/reference\.json && git commit", Verdict(NOT_RUN, "commits what the GPU step above "
                                                                              "records (and asks for a message)")),
    (r"make handout", Verdict(RUNS, "renders the handout from the record")),
    (r"make dist", Verdict(RUNS, "writes the student tarball the students' commands run in")),
    # instructors: grading
    (r"make grade SUBMISSIONS=\S+", Verdict(RUNS, "the sample class again, found graded already")),
    (r"bin/grader grade \S+ --from canvas --roster \S+ --device auto", Verdict(RUNS, "a one-student Canvas download")),
    (r"bin/grader grade \S+ --student \S+ --device auto", Verdict(RUNS, "regrades one student")),
    (r"bin/grader rescore results", Verdict(RUNS, "the stored scores again")),
    (r"bin/grader override \S+ \S+ \S+ --reason \S+ --by \S+", Verdict(RUNS, "a TA's change, on record")),
    (r"bin/grader export --roster \S+ --assignment-id \d+", Verdict(FAILS, NOT_MEASURED, r"--correctness-only")),
    (r"bin/grader export --to gradescope --student \S+", Verdict(FAILS, NOT_MEASURED, r"--correctness-only")),
    (r"bin/grader report", Verdict(RUNS, "the reports from the store")),
    (r"make overview", Verdict(RUNS, "the staff's page")),
    (r"make similarity SUBMISSIONS=\S+", Verdict(RUNS, "sim_c on every pair")),
    (r"bin/grader release --out \S+ --zip", Verdict(RUNS, "one zip per student")),
    (r"bin/grader grade \S+ --slurm .*", Verdict(NOT_RUN, "submits to a Slurm cluster (test_slurm_cluster.py starts "
                                                          "one)")),
    (r"bin/grader status", Verdict(NOT_RUN, "follows the Slurm batch of the line above")),
    (r"bin/grader tokens --roster \S+", Verdict(RUNS, "one token per student of the roster, into results/tokens.csv")),
    (r"bin/grader serve", Verdict(NOT_RUN, "a service that runs until it is stopped (test_service_*.py start it on "
                                           "loopback and talk to it)")),
    # TAs
    (r"make leaderboard", Verdict(RUNS, "publishes results/leaderboard/")),
    (r"rsync .*", Verdict(NOT_RUN, "copies the leaderboard to a web host")),
]


def verdict(command: Command) -> Verdict:
    found = [v for pattern, v in COMMANDS if re.fullmatch(pattern, command.text)]
    assert len(found) == 1, (f"{command.doc} ({command.section}): `{command.text}` matches {len(found)} entries of "
                             "COMMANDS: classify it there (runs, fails as documented, or not run and why)")
    return found[0]


# The documented value of each placeholder; {inputs} is the folder this test writes the Canvas files into.
PLACEHOLDERS = {
    "path/to/submissions": "data/sample-submissions",  # the sample class
    "DOWNLOAD": "{inputs}/download",  # a Canvas bulk download of one sample student (canvas_class.py's names)
    "gradebook.csv": "{inputs}/roster.csv",  # Canvas's gradebook export of that class (canvas_class.py)
    "canvas.csv": "{inputs}/roster.csv",
    "ID": "s01-stubs",
    "TASK": "fill",
    "POINTS": "1",
    "TEXT": "'checked by hand'",
    "NAME": "ta",
}


def substituted(text: str, inputs: Path) -> str:
    for name, value in PLACEHOLDERS.items():
        text = re.sub(rf"(?<![\w/.-]){re.escape(name)}(?![\w/.=-])", value.replace("{inputs}", str(inputs)), text)
    return text


def readme_commands() -> list[Command]:
    registry = Registry.from_file()
    tarball = render_readme(load_rubric(DEFAULT_RUBRIC, registry), registry)
    return commands((ROOT / "README.md").read_text(), README) + commands(tarball, TARBALL_README)


def test_every_command_of_the_readmes_is_classified():
    found = readme_commands()
    assert any(c.in_tarball for c in found) and any(not c.in_tarball for c in found)
    for command in found:
        verdict(command)
    unused = [p for p, _ in COMMANDS if not any(re.fullmatch(p, c.text) for c in found)]
    assert not unused, f"COMMANDS classifies commands no README shows any more: {unused}"


def test_a_command_shown_with_a_comment_or_in_a_folder_is_read_as_a_student_types_it():
    text = "# H\n\n## For students\n\n```\ncd starter\nmake test TASK=dot   # one task\n   # more words\n```\n"
    assert commands(text, README) == [Command(README, STUDENTS, "starter", "make test TASK=dot")]
    assert substituted("bin/grader override ID TASK POINTS --by NAME", Path("/x")) == \
        "bin/grader override s01-stubs fill 1 --by ta"
    assert substituted("make test TASK=dot --assignment-id 5", Path("/x")) == "make test TASK=dot --assignment-id 5"
    assert substituted("make grade SUBMISSIONS=path/to/submissions", Path("/x")) == \
        "make grade SUBMISSIONS=data/sample-submissions"


# --- running them ---------------------------------------------------------------------------------------------

@dataclass
class Ran:
    command: Command
    verdict: Verdict
    result: subprocess.CompletedProcess | None  # None: not run
    seconds: float = 0.0

    def problem(self) -> str:
        """What is wrong with how it ended ("" when nothing is)."""
        if self.result is None:
            return ""
        out = self.result.stdout + self.result.stderr
        said = f"\n--- its output, last lines ---\n{out[-3000:]}"
        if "Traceback (most recent call last)" in out:
            return f"`{self.command.text}` ended in a Python traceback{said}"
        if self.verdict.kind == RUNS and self.result.returncode != 0:
            return f"`{self.command.text}` exited {self.result.returncode}{said}"
        if self.verdict.kind == FAILS and (self.result.returncode == 0 or not re.search(self.verdict.says, out)):
            return (f"`{self.command.text}` should fail saying /{self.verdict.says}/ ({self.verdict.why}); it exited "
                    f"{self.result.returncode}{said}")
        return ""


def clone_environment() -> dict:
    """A shell's environment without this test run's: no outer make's settings, and no virtual environment on PATH
    (python3 is the machine's, which is what a fresh clone's make deps starts from). GRADER_BUILD_CACHE stays: the
    grader's build of the harness and the solution is found there only under the key of the clone's own sources
    and compilers (grader/backends/build_cache.py), so a clone that lacks a file, or holds another, builds its own; the
    same sources are the entry the other tests built (minutes of a CI run, once instead of twice)."""
    drop = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":")
                           if p and not (Path(p).parent / "pyvenv.cfg").is_file())
    return env


def fresh_clone(into: Path) -> Path:
    """`git clone` of this repository, with the working tree's changes not yet committed laid over it (what the
    next commit would hold): no build outputs, no .venv, no results."""
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(into)], check=True, timeout=300)
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--modified", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, set(listed.split("\0"))):
        source, target = ROOT / name, into / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif not source.exists():
            target.unlink(missing_ok=True)
    return into


def canvas_inputs(inputs: Path) -> Path:
    """A Canvas download of one sample student (the stubs: the quickest to grade) and the class's gradebook export."""
    canvas_class.build(inputs)
    keep = canvas_class.canvas_name("s01-stubs")
    for entry in (inputs / "download").iterdir():
        if entry.name != keep:
            entry.unlink()
    return inputs


def share_the_demo_grading(clone: Path) -> None:
    """results/ starts as a copy of results/demo's store, with its work folder: the same grading, not again."""
    results = clone / "results"
    shutil.copy2(results / "demo" / "grades.sqlite", results / "grades.sqlite")
    (results / "work").symlink_to("demo/work")


def run_all(found: list[Command], where, inputs: Path, prefix: list[str], env: dict, after=None) -> list[Ran]:
    ran = []
    for command in found:
        v = verdict(command)
        if v.kind == NOT_RUN:
            ran.append(Ran(command, v, None))
            continue
        start = time.monotonic()
        result = subprocess.run([*prefix, "bash", "-c", substituted(command.text, inputs)], cwd=where / command.cwd,
                                capture_output=True, text=True, timeout=1800, env=env)
        ran.append(Ran(command, v, result, time.monotonic() - start))
        print(f"{ran[-1].seconds:6.0f} s  exit {result.returncode}  {command.text}", file=sys.stderr)
        if after and command.text in after:
            after[command.text]()
    return ran


def skip_unless_a_machine_without_a_gpu_that_can_sandbox():
    if not gpu.gpu_missing():
        pytest.skip("this machine has a GPU: make demo would time the class there; these tests are of the path "
                    "without one (the GPU suite runs make demo's grading on a GPU)")
    if shutil.which("pandoc") is None:
        pytest.skip("pandoc is not installed: make handout and make dist need it (make deps installs it)")
    bwrap = find_bwrap()
    if bwrap is None:
        sandbox_unavailable("bubblewrap is not installed (make deps installs it): the grader sandboxes student code")
    try:
        Sandbox(bwrap, ResourceLimits.from_rubric(load_rubric(DEFAULT_RUBRIC, Registry.from_file()).limits)).check(
            Path("/tmp"))
    except SandboxError as e:
        sandbox_unavailable(f"bubblewrap cannot run here: {e}")


@pytest.fixture(scope="module")
def clone_runs(tmp_path_factory) -> tuple[Path, list[Ran]]:
    """README.md's commands but the students', in order, from a fresh clone."""
    skip_unless_a_machine_without_a_gpu_that_can_sandbox()
    top = tmp_path_factory.mktemp("readme")
    clone = fresh_clone(top / "clone")
    registry = json.loads((clone / "starter" / "harness" / "registry.json").read_text())  # what make dist reads
    write_synthetic_record(clone / "starter" / "bench" / "reference.json", registry, clone / "grader" / "rubric.toml",
                           kernels=clone / "solution" / "kernels")
    inputs = canvas_inputs(top / "inputs")
    found = [c for c in commands((clone / "README.md").read_text(), README) if not c.in_tarball]
    print(file=sys.stderr)
    return clone, run_all(found, clone, inputs, [], clone_environment(),
                          after={"make demo": lambda: share_the_demo_grading(clone)})


@pytest.fixture(scope="module")
def tarball_runs(clone_runs, tmp_path_factory) -> list[Ran]:
    """The tarball's README.md commands, then README.md's student commands, in the tarball the clone's make dist
    wrote, extracted, with the CUDA toolkit hidden. The tree starts as a copy of test_dist.py's first `make test`
    of the same bytes without CUDA (made_without_cuda: the tarball's cold CPU build, checked there, made once in
    a run): the commands run as written, on what a student has after their first `make test`."""
    clone, _ = clone_runs
    tarballs = list((clone / "dist").glob("*-starter.tar.gz"))
    assert len(tarballs) == 1, f"the clone's make dist wrote {len(tarballs)} tarballs in {clone / 'dist'}"
    first, _ = made_without_cuda(tarballs[0], tmp_path_factory)
    shutil.copytree(first.parent, clone.parent / "student", symlinks=True)
    extracted = clone.parent / "student" / first.name
    prefix, env = without_cuda(extracted.parent)
    with tarfile.open(tarballs[0]) as tar:
        readme = tar.extractfile(f"{extracted.name}/README.md").read().decode()
    found = commands(readme, TARBALL_README) + [c for c in commands((clone / "README.md").read_text(), README)
                                               if c.in_tarball]
    return run_all(found, extracted, clone.parent, prefix, env)


def test_every_readme_command_that_needs_no_gpu_works_from_a_fresh_clone(clone_runs):
    _, ran = clone_runs
    problems = [r.problem() for r in ran if r.problem()]
    assert not problems, "\n\n".join(problems)
    assert [r.command.text for r in ran if r.result is not None], "no command ran"


def test_make_demo_publishes_its_pages_and_says_it_graded_correctness_only(clone_runs):
    clone, ran = clone_runs
    demo = next(r for r in ran if r.command.text == "make demo").result
    out = demo.stdout + demo.stderr
    assert "no GPU found" not in out
    assert not re.search(r"^nvcc ", out, re.M), "make demo ran the project's nvcc build; the grader builds its own"
    banner = out[out.index("make demo graded the sample class"):]
    assert "for CORRECTNESS ONLY" in banner and "on the CPU backend" in banner, banner
    for page in ("results/demo/leaderboard/index.html", "results/demo/overview.html", "results/demo/feedback/"):
        assert page in banner, banner
        assert (clone / page).exists(), page
    assert len(list((clone / "results" / "demo" / "feedback").glob("*.html"))) == 8


def test_every_student_command_that_needs_no_gpu_works_in_the_tarball_without_cuda(tarball_runs):
    problems = [r.problem() for r in tarball_runs if r.problem()]
    assert not problems, "\n\n".join(problems)
    submitted = next(r for r in tarball_runs if r.command.text == "make submit").result
    assert "untouched" in submitted.stdout + submitted.stderr
