"""The object store (grader/backends/object_cache.py) and the fixed layout builds see (build_view.py).

Fast tier: the store alone, over files written here (no compiler): what names an entry, a changed header, a file
that read another task file, a second writer. Slow: real sandboxed CPU builds of the same task file by two
submissions (the same object, byte for byte), a re-upload that changes one file (one compile), and the compiler's
warnings and the student's paths on a build that compiled nothing.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.backends.build_view import ROOT, BuildView
from grader.backends.object_cache import ObjectCache
from grader.intake.submission import Submission
from grader.run.sandbox import ResourceLimits, Sandbox, SandboxError, find_bwrap
from grader.tests.conftest import REPO, over_cache, sandbox_unavailable
from grader.backends.local import Workspace

SAMPLES = REPO / "data" / "samples"


def _view(tmp_path: Path, name: str = "s1") -> BuildView:
    pristine, build = tmp_path / "pristine", tmp_path / "build"
    kernels, out_dir = tmp_path / "kernels" / name, build / f"submission-{name}"
    for folder in (pristine / "include", kernels, out_dir / "kernels"):
        folder.mkdir(parents=True, exist_ok=True)
    return BuildView(pristine, build, kernels, out_dir, None, fixed=True)


def _compiled(view: BuildView, name: str, body: bytes, header: Path, reads_also: str = ""):
    """What make would leave for `name`: its object, its dependency list as the build saw it, its log."""
    (view.kernels / name).write_bytes(body)
    stem = Path(name).stem
    objects = view.out_dir / "kernels"
    (objects / f"{stem}.o").write_bytes(b"OBJ:" + body)
    (objects / f"{stem}.o.log").write_text(f"{ROOT}/kernels/{name}:2:5: warning: unused variable 'x'\n")
    (objects / f"{stem}.d").write_text(f"{ROOT}/build/submission/kernels/{stem}.o: {ROOT}/kernels/{name} \\\n"
                                       f" include/tasks.h {header} {reads_also}\n\ninclude/tasks.h:\n")


def test_an_object_is_taken_back_by_the_same_bytes_name_target_and_entry_only(tmp_path):
    header = tmp_path / "system.h"
    header.write_text("// a system header\n")
    first = _view(tmp_path, "s1")
    cache = ObjectCache(tmp_path / "objects", "entry-A")
    _compiled(first, "add.cu", b"int add;\n", header)
    assert cache.store("objects", "add.cu", b"int add;\n", first.out_dir / "kernels", first)
    second = _view(tmp_path, "s2")
    said = cache.fetch("objects", "add.cu", b"int add;\n", second.out_dir / "kernels", second)
    assert said is not None and "warning: unused variable" in said  # its warnings, shown again
    assert (second.out_dir / "kernels" / "add.o").read_bytes() == b"OBJ:int add;\n"
    dep = (second.out_dir / "kernels" / "add.d").read_text()
    assert f"{second.kernels}/add.cu" in dep and str(ROOT) not in dep  # the real paths, for the gate
    for target, name, data, cached in (("race-objects", "add.cu", b"int add;\n", cache),
                                       ("objects", "fill.cu", b"int add;\n", cache),
                                       ("objects", "add.cu", b"int add; \n", cache),
                                       ("objects", "add.cu", b"int add;\n", ObjectCache(cache.root, "entry-B"))):
        assert cached.fetch(target, name, data, second.out_dir / "kernels", second) is None, (target, name, data)


def test_a_changed_header_outside_the_entry_is_a_miss(tmp_path):
    header = tmp_path / "system.h"
    header.write_text("// a system header\n")
    view = _view(tmp_path)
    cache = ObjectCache(tmp_path / "objects", "entry")
    _compiled(view, "dot.cu", b"int dot;\n", header)
    assert cache.store("objects", "dot.cu", b"int dot;\n", view.out_dir / "kernels", view)
    assert cache.fetch("objects", "dot.cu", b"int dot;\n", view.out_dir / "kernels", view) is not None
    header.write_text("// a system header, upgraded\n")
    assert cache.fetch("objects", "dot.cu", b"int dot;\n", view.out_dir / "kernels", view) is None
    header.unlink()
    assert cache.fetch("objects", "dot.cu", b"int dot;\n", view.out_dir / "kernels", view) is None


def test_an_object_that_read_another_task_file_is_not_kept_and_a_second_writer_keeps_the_first(tmp_path):
    header = tmp_path / "system.h"
    header.write_text("//\n")
    view = _view(tmp_path)
    cache = ObjectCache(tmp_path / "objects", "entry")
    (view.kernels / "matmul_tiled.cu").write_text("// another task's code\n")
    _compiled(view, "matmul_fast.cu", b"#include \"matmul_tiled.cu\"\n", header,
              reads_also=f"{ROOT}/kernels/matmul_tiled.cu")
    assert not cache.store("objects", "matmul_fast.cu", b"#include \"matmul_tiled.cu\"\n", view.out_dir / "kernels",
                           view)
    _compiled(view, "add.cu", b"int add;\n", header)
    assert cache.store("objects", "add.cu", b"int add;\n", view.out_dir / "kernels", view)
    (view.out_dir / "kernels" / "add.o").write_bytes(b"something else")
    assert not cache.store("objects", "add.cu", b"int add;\n", view.out_dir / "kernels", view)
    fetched = _view(tmp_path, "s9")
    cache.fetch("objects", "add.cu", b"int add;\n", fetched.out_dir / "kernels", fetched)
    assert (fetched.out_dir / "kernels" / "add.o").read_bytes() == b"OBJ:int add;\n"
    assert not list(cache.root.rglob(".new-*"))


# --- real builds ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu_sandboxed(tmp_path_factory, rubric) -> Workspace:
    """A CPU build tree whose builds run in the sandbox (the fixed layout), over the session's build cache entry,
    with an object store of its own (empty at the start)."""
    bwrap = find_bwrap()
    if bwrap is None:
        sandbox_unavailable("bubblewrap is not installed")
    work = tmp_path_factory.mktemp("objects-cpu")
    try:
        sandbox = Sandbox(bwrap, ResourceLimits.from_rubric(rubric.limits))
        sandbox.check(work)
    except SandboxError as e:
        sandbox_unavailable(f"bubblewrap cannot run here: {e}")
    ws = over_cache(Workspace(work, cpu=True, sandbox=sandbox), "cpu", "cpu")
    ws.objects.root = work / "objects"
    return ws


def _solution(*names: str) -> dict[str, bytes]:
    return {n: (REPO / "solution" / "kernels" / n).read_bytes() for n in names}


@pytest.mark.slow
def test_two_submissions_of_one_file_get_the_same_object_and_a_reupload_compiles_only_what_changed(cpu_sandboxed,
                                                                                                   rubric):
    ws = cpu_sandboxed
    files = _solution("fill.cu", "add.cu", "transpose.cu")
    first = ws.build(Submission("first", SAMPLES / "first", files=files), timeout=300, gate=rubric.gate)
    assert first.ok and not first.unbuilt, first.log[-2000:]
    assert ws.objects.stored == 3 and ws.objects.hits == 0
    second = ws.build(Submission("second", SAMPLES / "second", files=files), timeout=300, gate=rubric.gate)
    assert second.ok and ws.objects.hits == 3 and ws.objects.stored == 3
    a, b = (ws.build_dir / f"submission-{k}" / "kernels" for k in (Submission("first", SAMPLES / "first").key,
                                                                     Submission("second", SAMPLES / "second").key))
    own = (ws.objects.root.rglob("object.o"))
    assert len(list(own)) == 3
    # The harness links the same code whoever handed the files in.
    assert (a.parent / "harness").read_bytes() == (b.parent / "harness").read_bytes()
    changed = dict(files, **{"add.cu": files["add.cu"] + b"\n// a comment: a new object\n"})
    third = ws.build(Submission("first", SAMPLES / "first-again", files=changed), timeout=300, gate=rubric.gate)
    assert third.ok and ws.objects.stored == 4 and ws.objects.hits == 5  # add.cu compiled, the other two taken


@pytest.mark.slow
def test_a_build_that_compiled_nothing_shows_the_warnings_and_names_the_students_own_file(cpu_sandboxed, rubric):
    ws = cpu_sandboxed
    launcher = "void fill(std::int32_t* out, int rows, int cols) {"
    source = (REPO / "solution" / "kernels" / "fill.cu").read_text()
    assert launcher in source
    source = source.replace(launcher, launcher + " int unused_here = 0;").encode()
    logs = []
    for student in ("warns-1", "warns-2"):
        built = ws.build(Submission(student, SAMPLES / student, files={"fill.cu": source}), timeout=300,
                         gate=rubric.gate)
        assert built.ok, built.log[-2000:]
        logs.append(built.log)
        assert f"{ROOT}/" not in built.log and str(ws.work) not in built.log
        assert built.readable(f"{ROOT}/kernels/fill.cu:3: error") == "kernels/fill.cu:3: error"
    assert all("kernels/fill.cu" in log and "unused_here" in log for log in logs), logs
    hits = ws.objects.hits
    assert hits >= 1
    shutil.rmtree(ws.objects.root)  # a store that went away is a miss, not an error
    again = ws.build(Submission("warns-3", SAMPLES / "warns-3", files={"fill.cu": source}), timeout=300,
                     gate=rubric.gate)
    assert again.ok and ws.objects.hits == hits


@pytest.mark.slow
def test_the_checks_prelude_is_made_once_in_the_sandbox_at_the_paths_every_build_reads_it_from(cpu_sandboxed):
    """The nvcc-rules check's precompiled prelude, and the compile's (the graded build's and the race checker's),
    as a sandboxed build sees the tree: made by sandboxed compiles of one stub (Workspace.checks_prelude) into the
    entry's library folder, naming the fixed layout's paths; made again with the folder writable, the same
    compiles find the same four headers (their keys, the same as before) and write nothing: what a submission's
    build, the same compiles in the same layout, reads."""
    from grader.backends.cpu import nvcc_rules_checker
    from grader.backends.local import CHECKS_PRELUDE_MADE
    if not nvcc_rules_checker():
        pytest.skip("no clang: the nvcc-rules check does not run here")
    ws = cpu_sandboxed
    folder = (ws.build_dir / "lib" / "cpu" / "nvcc-rules").resolve()

    def sandboxed() -> dict[Path, int]:
        """The precompiled headers that name the fixed layout's pristine tree, with their times."""
        return {p: p.stat().st_mtime_ns for p in [*folder.glob("prelude-*.pch"), *folder.glob("host-*/*.gch")]
                if f"{ROOT}/pristine/".encode() in p.read_bytes()}
    for again in range(2):
        (folder / CHECKS_PRELUDE_MADE).unlink(missing_ok=True)
        ws._checks_prelude_tried = False
        if not again:  # (made by an earlier build of this entry: a builder of it without one reads none meanwhile)
            for old in sandboxed():
                old.unlink()
        before = sandboxed()
        ws.checks_prelude(300)
        assert (folder / CHECKS_PRELUDE_MADE).is_file()
        made = sandboxed()
        assert sorted(p.name.rsplit(".", 2)[1] for p in made if p.suffix == ".pch") == ["device", "host"], made
        assert len([p for p in made if p.suffix == ".gch"]) == 2, made  # AddressSanitizer's, the race checker's
        if again:
            assert made == before  # found, not made again
    ws.checks_prelude(300)  # marked: nothing to do
    assert sandboxed() == made
