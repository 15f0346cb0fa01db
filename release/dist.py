"""make dist: the one tarball students get, dist/<assignment>-starter.tar.gz.

It holds starter/ (stubs, harness, tests, Makefile, tools) as the working tree
has it (every file git does not ignore), the public reference cases of data/
the test suite reads, the rendered handout, a README, the header-only
libraries copied in from this machine, and the stubs' sha256 sums (so `make
submit` can tell an untouched stub). The solution's measured record is the
one the handout quotes, shipped as starter/bench/reference.json; a record that
did not measure today's solution stops it before anything is packed
(handout/record.py). It is reproducible, and it is written only after the leak
check has passed on the finished archive.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jinja2

from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from handout import record as measured_record
from handout.contract import CPU_NEEDS
from handout.render import Inputs, build as build_handout
from release import headers, leaks, tarball
from release.tarball import Member

REPO = Path(__file__).resolve().parents[1]
# What students get from the repository, as git pathspecs; everything else is generated.
SHIPPED = ("starter", "data/manifest.json", "data/cases")
# Inside starter/ but not for students: the CPU backend's own tests run textbook kernels that solve the tasks
# (tiled matmul, dot), which the leak check rightly refuses to ship.
NOT_SHIPPED = ("starter/cpu/tests/",)
STUB_SUMS = "starter/tools/pristine-stubs.sha256"
RECORD_MEMBER = "starter/bench/reference.json"  # where students' make bench finds the solution's numbers
README_TEMPLATE = Path(__file__).resolve().parent / "student-README.md.j2"
# The grading service's address for students' make upload (starter/tools/service.py reads it); none without one.
SERVICE_MEMBER = "starter/service.json"


class DistError(RuntimeError):
    pass


@dataclass
class DistOptions:
    registry: Registry
    out: Path = REPO / "dist"
    record: Path = measured_record.RECORD
    solution_kernels: Path = measured_record.SOLUTION_KERNELS
    rubric: Path = DEFAULT_RUBRIC
    deps_include: Path | None = None
    mtime: int | None = None  # default: SOURCE_DATE_EPOCH, else the last commit's time


def git(*args: str) -> str:
    result = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise DistError(f"git {' '.join(args)} failed: {result.stderr.strip()} (make dist packs a git checkout)")
    return result.stdout


def source_epoch() -> int:
    if os.environ.get("SOURCE_DATE_EPOCH", "").strip():
        return int(os.environ["SOURCE_DATE_EPOCH"])
    return int(git("log", "-1", "--format=%ct").strip())


def repo_members() -> tuple[dict[str, Member], list[str]]:
    """The shipped part of the working tree (tracked files and untracked ones git does not ignore), and the
    names of the untracked ones (reported, so nobody ships a stray file unawares)."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *SHIPPED).split("\0")
    untracked = set(git("ls-files", "-z", "--others", "--exclude-standard", "--", *SHIPPED).split("\0"))
    members = {}
    for name in sorted(set(filter(None, listed))):
        if name.startswith(NOT_SHIPPED):
            continue
        path = REPO / name
        if not os.path.lexists(path):
            continue  # deleted in the working tree, not yet committed
        mode = path.lstat().st_mode
        if not stat.S_ISREG(mode):
            raise DistError(f"{name}: not a plain file (a link?); the tarball holds plain files only")
        members[name] = Member(path.read_bytes(), bool(mode & stat.S_IXUSR))
    return members, sorted(n for n in untracked if n in members)


def stub_sums(members: dict[str, Member]) -> Member:
    lines = [f"{hashlib.sha256(m.data).hexdigest()}  {Path(name).name}\n" for name, m in sorted(members.items())
             if name.startswith("starter/kernels/") and name.endswith(".cu")]
    if not lines:
        raise DistError("no stubs in starter/kernels/: nothing for students to start from")
    return Member("".join(lines).encode())


def service_member(url: str, assignment: str) -> Member | None:
    """starter/service.json, where the course runs a grading service (the rubric's [service] url): what
    `make upload` reads."""
    if not url:
        return None
    return Member((json.dumps({"url": url, "assignment": assignment}, indent=1) + "\n").encode())


def render_readme(rubric, registry: Registry) -> str:
    """The tarball's README.md. A block tag's own line renders to nothing (trim_blocks, lstrip_blocks), so the
    task table's rows follow each other: a blank line between two rows would end the table there."""
    template = jinja2.Template(README_TEMPLATE.read_text(encoding="utf-8"), undefined=jinja2.StrictUndefined,
                               keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    return template.render(rubric=rubric, registry=registry,
                           cpu_needs=CPU_NEEDS.read_text(encoding="utf-8"))


def build(options: DistOptions) -> Path:
    measured_record.check(options.record, options.solution_kernels)  # before any work: today's, or nothing
    rubric = load_rubric(options.rubric, options.registry)
    mtime = options.mtime if options.mtime is not None else source_epoch()
    members, untracked = repo_members()
    if untracked:
        print(f"make dist: shipping files git does not track yet: {', '.join(untracked)}")
    for name, source in headers.collect(options.deps_include).items():
        members[name] = Member(source.read_bytes())
    members[STUB_SUMS] = stub_sums(members)
    members[RECORD_MEMBER] = Member(Path(options.record).read_bytes())
    members.pop(SERVICE_MEMBER, None)  # only the rubric's service ships, never a developer's own file
    service = service_member(rubric.service.url, rubric.name)
    if service is not None:
        members[SERVICE_MEMBER] = service
    with tempfile.TemporaryDirectory() as tmp:
        _, html = build_handout(Path(tmp), Inputs(registry=options.registry, rubric=options.rubric,
                                                  record=options.record, solution_kernels=options.solution_kernels))
        members["handout/assignment.html"] = Member(html.read_bytes())
    members["README.md"] = Member(render_readme(rubric, options.registry).encode())

    top = f"{rubric.name}-starter"
    options.out.mkdir(parents=True, exist_ok=True)
    final = options.out / f"{top}.tar.gz"
    partial = options.out / f".{top}.tar.gz.partial"
    tarball.write(partial, top, members, mtime)
    found = leaks.check_tarball(partial, leaks.secrets())
    if found:
        partial.unlink()
        raise DistError("the tarball would leak; nothing was written:\n  " + "\n  ".join(map(str, found)))
    partial.replace(final)
    return final
