"""The build cache every grading run opens (grader/backends/build_cache.py): where `grade` and `serve` look for it, and a work
folder laid over an entry (Workspace.use_built) whatever an earlier run left in it. Nothing is built here: the
entries are folders of small files; the real builds through the cache are test_grade_cpu.py's and the service's."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from grader.backends.local import Workspace
from grader.cli import main
from grader.cli.common import BUILD_CACHE_ENV, build_cache_root
from grader.backends import build_cache as cache
from grader.tests.fakes import SimulatedKind


def entry(root: Path, mark: str) -> Path:
    """A cache entry's work folder as a kind's build_cache leaves it, each file saying which entry it is."""
    built = root / mark / "work"
    for folder in ("pristine/kernels", "build/lib", "build/solution/kernels", "build/stubs/kernels"):
        (built / folder).mkdir(parents=True)
        (built / folder / "made").write_text(mark)
    return built


def test_the_cache_is_the_option_else_the_environment_else_the_work_folders(tmp_path, monkeypatch):
    monkeypatch.delenv(BUILD_CACHE_ENV, raising=False)
    assert build_cache_root(SimpleNamespace(build_cache=None), tmp_path / "w") == (tmp_path / "w" / "cache").resolve()
    monkeypatch.setenv(BUILD_CACHE_ENV, str(tmp_path / "env"))
    assert build_cache_root(SimpleNamespace(build_cache=None), tmp_path / "w") == (tmp_path / "env").resolve()
    assert build_cache_root(SimpleNamespace(build_cache=str(tmp_path / "o")), tmp_path / "w") == (tmp_path / "o")
    assert build_cache_root(SimpleNamespace(), tmp_path / "w") == (tmp_path / "env").resolve()  # (a command without it)


def test_a_work_folder_is_laid_over_an_entry_whatever_an_earlier_run_left_there(tmp_path):
    first, second = entry(tmp_path / "cache", "first"), entry(tmp_path / "cache", "second")
    ws = Workspace(tmp_path / "work", cpu=True)
    # what `grade` before the cache left in RESULTS/work: its own build, in real folders
    for folder in (ws.pristine, ws.build_dir / "lib", ws.build_dir / "solution" / "stale"):
        folder.mkdir(parents=True)
    (ws.build_dir / "submission-s01").mkdir()
    ws.use_built(first)
    assert ws.pristine.is_symlink() and (ws.pristine / "kernels" / "made").read_text() == "first"
    assert (ws.build_dir / "lib").is_symlink() and (ws.build_dir / "lib" / "made").read_text() == "first"
    # the solution's and the stubs' objects are this folder's own copies, so a stale make writes here only
    assert not (ws.build_dir / "solution").is_symlink() and not (ws.build_dir / "solution" / "stale").exists()
    assert (ws.build_dir / "stubs" / "kernels" / "made").read_text() == "first"
    (ws.build_dir / "solution" / "kernels" / "made").write_text("rewritten here")
    assert (first / "build" / "solution" / "kernels" / "made").read_text() == "first"
    ws.use_built(second)  # another entry (changed sources): the links and the copies follow it
    assert (ws.pristine / "kernels" / "made").read_text() == "second"
    assert (ws.build_dir / "solution" / "kernels" / "made").read_text() == "second"
    assert (ws.build_dir / "submission-s01").is_dir()  # (a submission's own folder is not the entry's)


def test_an_entry_is_built_once_and_found_after(tmp_path):
    rubric = Path(__file__).resolve().parents[1] / "rubric.toml"
    built = []
    first, made = cache.ensure(tmp_path, SimulatedKind(), "simulated", 1, rubric, announce=built.append)
    again, made_again = cache.ensure(tmp_path, SimulatedKind(), "simulated", 1, rubric, announce=built.append)
    assert (made, made_again) == (True, False) and built == [first.folder] and again.folder == first.folder
    assert len((first.folder / "builds.log").read_text().splitlines()) == 1


def test_grade_says_in_one_line_when_its_cache_cannot_be_made(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GRADER_TEST_BACKENDS", "1")
    (tmp_path / "subs" / "s01").mkdir(parents=True)
    (tmp_path / "subs" / "s01" / "add.cu").write_text("// empty\n")
    (tmp_path / "file").write_text("not a folder")
    status = main(["grade", str(tmp_path / "subs"), "--device", "simulated", "--unsafe-no-sandbox", "--no-progress",
                   "--results", str(tmp_path / "r"), "--build-cache", str(tmp_path / "file" / "cache")])
    err = capsys.readouterr().err
    assert status != 0 and "cannot hold the build cache" in err and "Traceback" not in err, err


def test_a_new_bench_record_keeps_the_key_and_any_other_change_under_starter_makes_another(tmp_path):
    """make bench-reference writes bench/reference.json each term: no build reads it, so it must not rebuild every
    entry; a change to anything else the build copies must."""
    repo = tmp_path / "repo"
    for name, text in (("starter/harness/main.cpp", "int main;\n"), ("starter/bench/reference.json", "{}\n"),
                       ("starter/bench/profile-reference.json", "{}\n"), ("solution/kernels/add.cu", "// add\n")):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    key = lambda: cache.key_of(cache.key_inputs(SimulatedKind(), "simulated", repo))  # noqa: E731
    before = key()
    (repo / "starter/bench/reference.json").write_text('{"measured": "today"}\n')
    assert key() == before
    (repo / "starter/bench/profile-reference.json").write_text('{"counted": "today"}\n')
    assert key() != before
    (repo / "starter/bench/profile-reference.json").write_text("{}\n")
    (repo / "starter/harness/main.cpp").write_text("int main();\n")
    assert key() != before
