"""starter/bench/reference.json: the one measured record, and what ties it to the code it measured.

The record is the solution's `make bench` run on the grading GPU: its
bench.json (layout: starter/bench/bench.schema.json; the device it ran on is
`device.name`, the time `date`) with one object added, `provenance`:

    "provenance": {
      "solution_sha256": "<hex>",                     the kernels that were measured, hashed as below
      "solution_files": {"add.cu": "<hex>", ...},     each file's own sha256 (to name what changed)
      "harness_version": "2.0.0"                      `harness --version` of the build that measured
    }

The solution's hash is sha256 over one line per solution/kernels/*.cu file,
sorted by name (byte order): the file's sha256 in hex, two spaces, its name, a
newline. It is what

    cd solution/kernels && LC_ALL=C sha256sum *.cu | sha256sum

prints, so anyone can check a record by hand.

Students' `make bench` plots the record beside their kernels, the handout
quotes it and draws its plots from it (starter/bench/plot_bench.py), and
`make dist` ships it. Two top-level targets write it, on the grading GPU:

    make bench            measures; first writes results/bench/sources.json (`sources` below):
                          the hash of the kernels it builds and measures, and the harness version;
    make bench-reference  results/bench/bench.json + sources.json -> the record (`save`), refused
                          when solution/kernels changed since make bench.

`make handout` and `make dist` read it through `check`: a record that is
missing, carries no provenance, or was measured on kernels other than today's
is refused, with the record's path, both hashes and the command that refreshes it.

    python3 -m handout.record check          is the record today's? (exit 0 yes, 1 no, saying why)
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "starter" / "bench" / "reference.json"
SOLUTION_KERNELS = REPO / "solution" / "kernels"
PLOT_BENCH = REPO / "starter" / "bench" / "plot_bench.py"
SOURCES = "sources.json"  # beside bench.json in make bench's output folder
REFRESH = "make bench && make bench-reference"
GPU_FILE = Path(__file__).resolve().parents[1] / "starter" / "tools" / "gpu.toml"


class RecordError(ValueError):
    """The record cannot be used or written; the message says why and what to run."""


@dataclass(frozen=True)
class Provenance:
    solution_sha256: str
    solution_files: dict[str, str]
    harness_version: str

    def as_json(self) -> dict:
        return {"solution_sha256": self.solution_sha256, "solution_files": dict(self.solution_files),
                "harness_version": self.harness_version}

    @classmethod
    def from_json(cls, data: object, where: Path) -> "Provenance":
        ok = (isinstance(data, dict) and isinstance(data.get("solution_sha256"), str)
              and isinstance(data.get("solution_files"), dict) and isinstance(data.get("harness_version"), str))
        if not ok:
            raise RecordError(f"{where}: 'provenance' must hold solution_sha256, solution_files and "
                              f"harness_version (see handout/record.py)")
        return cls(data["solution_sha256"], dict(data["solution_files"]), data["harness_version"])


def solution_files(kernels: Path = SOLUTION_KERNELS) -> dict[str, str]:
    """Every kernels/*.cu by name -> the sha256 of its contents, in byte order of the names."""
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in Path(kernels).glob("*.cu") if p.is_file()}
    if not files:
        raise RecordError(f"{kernels}: no .cu files: nothing to hash")
    return {name: files[name] for name in sorted(files, key=lambda n: n.encode())}


def combined_sha256(files: dict[str, str]) -> str:
    """sha256 of the lines `<sha256>  <name>\\n` in byte order of the names (`sha256sum *.cu | sha256sum`)."""
    lines = "".join(f"{files[name]}  {name}\n" for name in sorted(files, key=lambda n: n.encode()))
    return hashlib.sha256(lines.encode()).hexdigest()


def solution_sha256(kernels: Path = SOLUTION_KERNELS) -> str:
    return combined_sha256(solution_files(kernels))


def harness_version(harness: Path) -> str:
    """The version a built harness reports (`harness --version`: "harness 2.0.0 (JSON schema 2)")."""
    try:
        out = subprocess.run([str(harness), "--version"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise RecordError(f"{harness}: cannot run it ({e}); make bench builds it") from None
    words = out.stdout.split()
    if out.returncode != 0 or len(words) < 2 or words[0] != "harness":
        raise RecordError(f"{harness} --version printed {out.stdout.strip()!r} (exit {out.returncode}), "
                          f"not 'harness <version> ...'")
    return words[1]


def sources(kernels: Path, harness: Path) -> Provenance:
    files = solution_files(kernels)
    return Provenance(combined_sha256(files), files, harness_version(harness))


def changed_files(recorded: dict[str, str], today: dict[str, str]) -> list[str]:
    """The names whose contents differ, with what happened to files that came or went."""
    out = []
    for name in sorted(set(recorded) | set(today)):
        if name not in today:
            out.append(f"{name} (gone)")
        elif name not in recorded:
            out.append(f"{name} (new)")
        elif recorded[name] != today[name]:
            out.append(name)
    return out


def _plot_bench():
    """starter/bench/plot_bench.py (it ships to students on its own, outside any package) as a module."""
    if "plot_bench" not in sys.modules:
        spec = importlib.util.spec_from_file_location("plot_bench", PLOT_BENCH)
        module = importlib.util.module_from_spec(spec)
        sys.modules["plot_bench"] = module  # its dataclasses look themselves up there
        spec.loader.exec_module(module)
    return sys.modules["plot_bench"]


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise RecordError(f"{path}: cannot be read as JSON ({e})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: not a JSON object")
    return data


def check(record: Path = RECORD, kernels: Path = SOLUTION_KERNELS) -> Provenance:
    """The record's provenance when it measured today's kernels; RecordError (naming the record, both hashes
    and the refresh command) when it is missing, unstamped or stale."""
    record = Path(record)
    today = solution_files(kernels)
    today_sha = combined_sha256(today)
    refresh = (f"refresh it on the grading GPU ({_grading_gpu()}) with `{REFRESH}`, then commit {_shown(record)}")
    if not record.is_file():
        raise RecordError(f"{_shown(record)} is missing: the solution's measured record (solution sha256 "
                          f"{today_sha} today). {refresh[0].upper() + refresh[1:]}.")
    data = _read_json(record)
    if "provenance" not in data:
        raise RecordError(f"{_shown(record)} carries no provenance: nothing says which solution it measured "
                          f"(recorded: none; {_shown(kernels)} today: {today_sha}). {refresh[0].upper() + refresh[1:]}.")
    provenance = Provenance.from_json(data["provenance"], record)
    if provenance.solution_sha256 != today_sha:
        changed = changed_files(provenance.solution_files, today)
        raise RecordError(
            f"{_shown(record)} measured another solution: it records solution sha256 {provenance.solution_sha256}, "
            f"{_shown(kernels)} hashes to {today_sha} today"
            + (f" (changed: {', '.join(changed)})" if changed else "")
            + f". Its numbers are not today's solution's: {refresh}.")
    return provenance


def save(bench_dir: Path, record: Path = RECORD, kernels: Path = SOLUTION_KERNELS) -> str:
    """bench_dir/bench.json (the top-level make bench's, on the solution) stamped with bench_dir/sources.json,
    written to `record`. Refused unless the kernels are still the ones make bench measured."""
    bench, stamp = Path(bench_dir) / "bench.json", Path(bench_dir) / SOURCES
    plot_bench = _plot_bench()
    try:
        doc = plot_bench.solution_bench(bench)
    except plot_bench.BenchError as e:
        raise RecordError(str(e)) from None
    if not stamp.is_file():
        raise RecordError(f"{stamp} is missing: the top-level `make bench` writes it beside bench.json (which "
                          f"kernels it measured, which harness); run `{REFRESH}`")
    measured = Provenance.from_json(_read_json(stamp), stamp)
    today = solution_files(kernels)
    if combined_sha256(today) != measured.solution_sha256:
        changed = changed_files(measured.solution_files, today)
        raise RecordError(f"{_shown(kernels)} changed since make bench measured it (measured: solution sha256 "
                          f"{measured.solution_sha256}, today: {combined_sha256(today)}"
                          + (f"; changed: {', '.join(changed)}" if changed else "")
                          + f"): run `{REFRESH}` again")
    doc = {**doc, "provenance": measured.as_json()}
    Path(record).parent.mkdir(parents=True, exist_ok=True)
    Path(record).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return (f"recorded the solution's bench on {doc['device']['name']}, {doc['date']} (solution sha256 "
            f"{measured.solution_sha256}, harness {measured.harness_version}) as {_shown(record)}: commit it")


def _shown(path: Path) -> str:
    """A path as a reader of the repository knows it: relative to the repository when inside it."""
    path = Path(path).resolve()
    try:
        return path.relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def _grading_gpu() -> str:
    import tomllib
    try:
        return tomllib.loads(GPU_FILE.read_text(encoding="utf-8"))["gpu"]["name"]
    except (OSError, KeyError, ValueError):
        return "the GPU starter/tools/gpu.toml names"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m handout.record", description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=Path, default=SOLUTION_KERNELS, help="the solution's kernels")
    commands = parser.add_subparsers(dest="command", required=True)
    src = commands.add_parser("sources", help="write what make bench measures (kernels' hash, harness version)")
    src.add_argument("--harness", type=Path, required=True, help="the solution's built harness")
    src.add_argument("--out", type=Path, required=True, help=f"where to write it (make bench: results/bench/{SOURCES})")
    sv = commands.add_parser("save", help="stamp make bench's bench.json and write the record")
    sv.add_argument("bench_dir", type=Path, help="make bench's output folder (results/bench)")
    sv.add_argument("--record", type=Path, default=RECORD)
    ck = commands.add_parser("check", help="is the record today's solution's?")
    ck.add_argument("--record", type=Path, default=RECORD)
    args = parser.parse_args(argv)
    try:
        if args.command == "sources":
            provenance = sources(args.kernels, args.harness)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(provenance.as_json(), indent=1) + "\n", encoding="utf-8")
            print(f"wrote {args.out}: solution sha256 {provenance.solution_sha256}, "
                  f"harness {provenance.harness_version}")
        elif args.command == "save":
            print(save(args.bench_dir, args.record, args.kernels))
        else:
            provenance = check(args.record, args.kernels)
            print(f"{_shown(args.record)} measured today's solution (sha256 {provenance.solution_sha256}, "
                  f"harness {provenance.harness_version})")
    except RecordError as e:
        print(f"{parser.prog} {args.command}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
