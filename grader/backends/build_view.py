"""Where a submission's sandboxed build sees its folders.

A compiler writes the paths it was given into what it makes: `__FILE__` in the CPU backend's launch sites and
in device code, the line tables a sanitizer or ASan report is read from, the dependency list. Built where the
grader keeps it (kernels/<submission>/, build/submission-<submission>/), the same task file gives a different
object for every submission, and no object can be reused by another. So where the sandbox can show a folder at
another path, every build sees one fixed layout:

    /grading/pristine          the pristine harness (make runs there)
    /grading/build/lib         its library (and the CPU backend's runtime)
    /grading/build/submission  this submission's build folder, the only writable one
    /grading/kernels           this submission's task files

and the same file, flags and toolchain give the same object whichever submission hands it in
(backends/object_cache.py). Without a sandbox (--unsafe-no-sandbox) the build sees the real folders and nothing
is shared. What the build writes that the grader reads back (the dependency lists, the include lists) names the
fixed paths; `to_host` turns them into the real ones, and `folder_names` names both as a student knows them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/grading")
FIXED_TAG = "submission"  # the build folder's name under BUILD (make's KTAG)


@dataclass(frozen=True)
class BuildView:
    pristine: Path
    build: Path
    kernels: Path
    out_dir: Path
    deps_include: Path | None
    fixed: bool  # whether the build sees the fixed layout (else the real folders)

    @property
    def seen(self) -> dict[str, Path]:
        """What make is given: each folder as the build sees it."""
        if not self.fixed:
            return {"pristine": self.pristine, "build": self.build, "kernels": self.kernels, "out_dir": self.out_dir}
        return {"pristine": ROOT / "pristine", "build": ROOT / "build", "kernels": ROOT / "kernels",
                "out_dir": ROOT / "build" / FIXED_TAG}

    @property
    def tag(self) -> str:
        return FIXED_TAG if self.fixed else self.out_dir.name

    def mounts(self) -> tuple[list, list]:
        """(read-only, writable) for grader.run.sandbox: folders, or (folder, where the build sees it) pairs. The
        header libraries stay at their real path (the library's stamp names it; the cache key holds it)."""
        seen = self.seen
        lib = self.build / "lib"
        read_only = [(self.pristine, seen["pristine"]), (lib, seen["build"] / "lib"), (self.kernels, seen["kernels"])]
        if not self.fixed:
            read_only = [source for source, _ in read_only]
        if self.deps_include:
            read_only.append(self.deps_include)
        writable = [(self.out_dir, seen["out_dir"])] if self.fixed else [self.out_dir]
        return read_only, writable

    def pairs(self) -> list[tuple[str, str]]:
        """(the path the build saw, the real one), folders with a trailing slash, longest first."""
        if not self.fixed:
            return []
        seen = self.seen
        pairs = [(seen["out_dir"], self.out_dir), (seen["build"] / "lib", self.build / "lib"),
                 (seen["kernels"], self.kernels), (seen["pristine"], self.pristine)]
        return [(f"{a}/", f"{b}/") for a, b in pairs]

    def to_host(self, text: str) -> str:
        """Text the build wrote (a dependency or include list) with its paths made the real ones."""
        for seen, real in self.pairs():
            text = text.replace(seen, real)
        return text

    def host_files(self, folder: Path, suffixes: tuple[str, ...]):
        """Rewrites each file of `folder` with one of `suffixes` through to_host."""
        if not self.fixed or not folder.is_dir():
            return
        for path in folder.iterdir():
            if path.suffix in suffixes and path.is_file():
                text = path.read_text(errors="replace")
                host = self.to_host(text)
                if host != text:
                    path.write_text(host)


def fixed_folder_names() -> tuple[tuple[str, str], ...]:
    """The fixed layout's folders as a student's checkout names them (BuildResult.folder_names)."""
    return (f"{ROOT}/kernels/", "kernels/"), (f"{ROOT}/pristine/", ""), (f"{ROOT}/build/", "build/")
