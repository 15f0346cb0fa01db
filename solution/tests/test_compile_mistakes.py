"""What a student sees when a task file does not compile on the CPU path (issue 45): each mistake of the corpus
(solution/tests/compile_mistakes/mistakes.py: one line of a solution's task file each) compiled for real through
cudacpu.py with g++ and with clang++, and the compiler's messages checked to be about the student's file: the
first at the mistake's line, quoting the student's own text, a screenful at most, and none of the rewrite's or
the runtime's names. starter/cpu/tests/test_messages.py tests the same on captured outputs, without compilers."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # about 40 compiles

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "starter"
sys.path.insert(0, str(Path(__file__).resolve().parent / "compile_mistakes"))
import mistakes  # noqa: E402
from mistakes import HEADER, INTERNAL, QUOTE  # noqa: E402

COMPILERS = [c for c in ("g++", "clang++-19") if shutil.which(c)]
MAX_LINES = 25


NAMES = sorted(mistakes.MISTAKES)
assert len(NAMES) >= 10


def compiled(tmp: str) -> dict[tuple[str, str], subprocess.CompletedProcess]:
    """Every corpus file written (mistakes.write) and compiled once per compiler, side by side: the compiles are
    what takes the time."""
    def one(job: tuple[Path, str]) -> subprocess.CompletedProcess:
        source, cxx = job
        out = Path(tmp) / f"{source.stem}.{cxx}.o"
        return subprocess.run([sys.executable, str(STARTER / "cpu" / "cudacpu.py"), "compile", "-std=c++17",
                               "-Xcompiler", "-Wall,-Wextra,-Wno-unused-parameter", "-I", str(STARTER / "include"),
                               "-I", str(STARTER / "harness"), "-c", str(source), "-o", str(out)],
                              capture_output=True, text=True, env=dict(os.environ, CXX=cxx), cwd=ROOT)
    jobs = [(source, cxx) for source in mistakes.write(Path(tmp)) for cxx in COMPILERS]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return {(s.stem, cxx): (s, done) for (s, cxx), done in zip(jobs, pool.map(one, jobs))}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[tuple[str, str], subprocess.CompletedProcess]:
    if not COMPILERS:
        pytest.skip("neither g++ nor clang++-19 is installed")
    return compiled(str(tmp_path_factory.mktemp("compile_mistakes")))


@pytest.mark.parametrize("cxx", ["g++", "clang++-19"])
@pytest.mark.parametrize("name", NAMES)
def test_the_message_is_about_the_students_file(outputs, name: str, cxx: str) -> None:
    if cxx not in COMPILERS:
        pytest.skip(f"{cxx} is not installed")
    source, done = outputs[(name, cxx)]
    lines = done.stderr.splitlines()
    report = f"{cxx} on {source.name}:\n{done.stderr}"
    assert done.returncode == (0 if name in mistakes.COMPILES else 1), report
    first = next((m for m in map(HEADER.match, lines) if m and m.group("kind") != "note"), None)
    assert first is not None, report
    assert Path(first.group("file")).resolve() == source.resolve(), report
    assert int(first.group("line")) == mistakes.line(name), report
    theirs = source.read_text().splitlines()
    # A column of the student's line, not of the rewritten one (g++ quotes the line from the file itself).
    assert int(first.group("col") or 1) <= len(theirs[mistakes.line(name) - 1]) + 1, report
    about_theirs, quoted = False, 0
    for text in lines:
        header = HEADER.match(text)
        if header:
            about_theirs = Path(header.group("file")).resolve() == source.resolve()
        quote = QUOTE.match(text)
        if quote and about_theirs:
            assert quote.group("text") == theirs[int(quote.group("line")) - 1].expandtabs(8), report
            quoted += 1
    assert quoted >= 1, report
    # The driver's own last line names itself; every other line is the compiler's, about the student's code.
    assert not [t for t in lines if INTERNAL.search(t) and not t.startswith("cudacpu: ")], report
    assert len(lines) <= MAX_LINES, report
