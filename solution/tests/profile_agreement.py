"""The CPU's performance counters beside Nsight Compute's, launch by launch (issue 31).

    python3 solution/tests/profile_agreement.py cpu OUT_DIR              # the CPU's counts (no GPU)
    python3 solution/tests/profile_agreement.py compare GPU_DIR CPU_DIR [--write FILE]

GPU_DIR holds what docs/gpu-runs/profile_agreement.sh wrote on a GPU machine (one
ncu CSV per run); `cpu` runs the same programs on the CPU backend, with the
same arguments, into OUT_DIR (one JSON-lines file per run). `compare` pairs the
launches of each run by kernel name and order, and prints every count of both
sides and how many are equal. --write keeps the GPU's side (per run, per kernel)
for test_cpu_profile.py, which checks the CPU's counts against it without a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "starter"
sys.path.insert(0, str(ROOT))

from grader.run import ncu  # noqa: E402

# What each compared count is, on each side: ncu's metrics (grader/run/ncu.py, which make profile GPU=1 reads too)
# and the CPU's (space, op, field).
CPU_FIELDS = {
    "global load requests": ("global", "load", "instructions"), "global load sectors": ("global", "load", "sectors"),
    "global store requests": ("global", "store", "instructions"),
    "global store sectors": ("global", "store", "sectors"),
    "global atomic requests": ("global", "atomic", "instructions"),
    "shared load requests": ("shared", "load", "instructions"),
    "shared store requests": ("shared", "store", "instructions"),
    "shared load wavefronts": ("shared", "load", "wavefronts"),
    "shared store wavefronts": ("shared", "store", "wavefronts"),
    "shared load bank conflicts": ("shared", "load", "conflicts"),
    "shared store bank conflicts": ("shared", "store", "conflicts"),
}
COUNTS = {label: (ncu.COUNTS[label], field) for label, field in CPU_FIELDS.items()}
# The counts the issue's target names: "equal counts for sectors and conflicts".
TARGET = ("global load sectors", "global store sectors", "shared load bank conflicts", "shared store bank conflicts")

# The runs: (name, kernels folder or None for the pattern program, task, dtype). Mirrors profile_agreement.sh.
PLANTED = ("inverted_indexing", "swapped_indices", "missing_syncthreads", "load_guarded_on_k_only",
           "block_row_per_matrix_row", "missing_bounds_check", "race")
CORPUS = {"solution": ROOT / "solution" / "kernels", "s02": ROOT / "data" / "sample-submissions" / "s02-naive-only",
          "s08": ROOT / "data" / "sample-submissions" / "s08-fast",
          **{p: ROOT / "solution" / "tests" / "planted" / p for p in PLANTED}}


LAB_TRANSPOSE = ROOT / "solution" / "lab" / "transpose" / "variants.cu"
LAB_VERSIONS = range(6)  # t0..t5: solution/lab/transpose/variants.cu's kVariants


def write_lab_files(out: Path) -> dict[str, Path]:
    """Each version of the transpose lab as a task file of its own folder (t0/transpose.cu, ...). The text is
    copied in, not #included: the CPU backend rewrites launches and __shared__ only in the file it compiles."""
    text = LAB_TRANSPOSE.read_text().replace('#include "../candidates.h"',
                                             f'#include "{LAB_TRANSPOSE.parent.parent / "candidates.h"}"')
    folders = {}
    for v in LAB_VERSIONS:
        folder = out / f"lab-t{v}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "transpose.cu").write_text(
            f"// solution/lab/transpose/variants.cu's version t{v} as a task file (profile_agreement.py).\n"
            f"{text}\ntemplate <typename T>\nvoid transpose(const T* in, T* out, int rows, int cols) {{\n"
            f"    lab::transpose_v1::transpose<{v}, T>(in, out, rows, cols);\n}}\n\n"
            "TRANSPOSE_TYPES(INSTANTIATE_TRANSPOSE)\n")
        folders[f"lab-t{v}"] = folder
    return folders


def runs(lab_root: Path | None = None) -> list[tuple[str, Path, str, str]]:
    out = []
    corpus = dict(CORPUS)
    if lab_root is not None:
        corpus.update(write_lab_files(lab_root))
    for name, folder in corpus.items():
        for f in sorted(folder.glob("*.cu")):
            task = f.stem
            if task == "matmul_fast":
                continue
            out.append((f"{name}-{task}", folder, task, "int32" if task == "fill" else "float32"))
    return out


def gpu_launches(csv_path: Path) -> list[dict]:
    """Per launch: the kernel's name, the compared counts, its registers and theoretical occupancy, from ncu's raw
    page."""
    return [{**launch, "registers": int(launch["registers"] or 0), "occupancy_percent": launch["occupancy_percent"] or 0}
            for launch in ncu.launches(csv_path.read_text(errors="replace"))]


def cpu_counts(launch: dict) -> dict:
    counts = {label: 0 for label in COUNTS}
    for site in launch["sites"]:
        for label, (_, (space, op, field)) in COUNTS.items():
            if site["space"] != space or site["op"] != op:
                continue
            if field == "conflicts":
                counts[label] += site["wavefronts"] - site["ideal_wavefronts"]
            else:
                counts[label] += site.get(field, 0)
    return counts


def cpu_launches(jsonl: Path) -> list[dict]:
    out = []
    for d in (json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()):
        b = d["block"]
        out.append({"kernel": d["kernel"], "counts": cpu_counts(d), "threads": b[0] * b[1] * b[2],
                    "shared_bytes": d["static_shared_bytes"] + d["dynamic_shared_bytes"]})
    return out


def occupancy_rows(pairs: list[tuple[dict, dict]], run: str) -> list[dict]:
    """Theoretical occupancy: ncu's, and the rules of starter/tools/occupancy.py given the CPU's block size and
    shared memory and the registers nvcc gave the kernel (the CPU cannot know those)."""
    sys.path.insert(0, str(ROOT))
    from handout.occupancy import load_gpu, occupancy
    gpu, rows = load_gpu(), []
    for g, c in pairs:
        if not g.get("registers") or not g.get("occupancy_percent"):
            continue
        mine = occupancy(gpu, c["threads"], g["registers"], c["shared_bytes"] / 1024).percent(gpu)
        rows.append({"run": run, "kernel": c["kernel"], "count": f"occupancy % ({g['registers']} registers)",
                     "gpu": round(g["occupancy_percent"], 1), "cpu": round(mine, 1)})
    return rows


def pair(gpu: list[dict], cpu: list[dict]) -> list[tuple[dict, dict]]:
    """Each CPU launch with the GPU's next launch of the same kernel (the harness's own kernels have no CPU side,
    and a kernel one side ran alone pairs with nothing)."""
    pairs, start = [], 0
    for c in cpu:
        match = next((i for i in range(start, len(gpu)) if gpu[i]["kernel"] == c["kernel"]), None)
        if match is not None:
            pairs.append((gpu[match], c))
            start = match + 1
    return pairs


# --- the CPU side -------------------------------------------------------------------------------------------

PATTERNS = STARTER / "cpu" / "tests" / "profile" / "patterns.cu"


def build_counting_program(source: Path, program: Path) -> Path:
    """A one-file CUDA program built by the CPU backend for counting (--racecheck), at `program`."""
    driver = [sys.executable, str(STARTER / "cpu" / "cudacpu.py")]
    obj = program.with_suffix(".o")
    subprocess.run([*driver, "compile", "--racecheck", "-I", str(STARTER / "include"), "-O2", "-c", str(source),
                    "-o", str(obj)], check=True)
    subprocess.run([*driver, "link", "--racecheck", "-o", str(program), str(obj)], check=True)
    return program


def run_cpu(out: Path, build: str = "build/profile-agreement") -> None:
    out.mkdir(parents=True, exist_ok=True)
    program = build_counting_program(PATTERNS, out / "patterns")
    (out / "patterns.jsonl").unlink(missing_ok=True)
    subprocess.run([str(program)], check=True, env={**os.environ, "CUDA_CPU_PROFILE": str(out / "patterns.jsonl")},
                   stdout=subprocess.DEVNULL)
    built = set()
    for name, folder, task, dtype in runs(out / "lab"):
        corpus = name[: -len(task) - 1]
        harness = STARTER / build / f"prof-{corpus}" / "racecheck" / "harness"
        if corpus not in built:
            subprocess.run(["make", "-s", "-C", str(STARTER), "-j2", "race-harness", "CPU=1", f"KERNELS={folder}",
                            f"KTAG=prof-{corpus}", f"BUILD={build}"], check=True, stdout=subprocess.DEVNULL)
            built.add(corpus)
        target = out / f"{name}.jsonl"
        target.unlink(missing_ok=True)
        subprocess.run([str(harness), "--task", task, "--dtype", dtype, "--suite", "profile", "--check-only",
                        "--check-runs", "1", "--fixed-placement", "--no-limits", "--reference", "cpu", "--seed", "1"],
                       env={**os.environ, "CUDA_CPU_PROFILE": str(target)}, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


# --- comparing --------------------------------------------------------------------------------------------

def compare(gpu_dir: Path, cpu_dir: Path) -> tuple[list[dict], dict]:
    rows, occupancy = [], []
    for jsonl in sorted(cpu_dir.glob("*.jsonl")):
        name = jsonl.stem
        csv_path = gpu_dir / f"{name}.csv"
        if not csv_path.exists():
            continue
        pairs = pair(gpu_launches(csv_path), cpu_launches(jsonl))
        occupancy.extend(occupancy_rows(pairs, name))
        for g, c in pairs:
            for label in COUNTS:
                if label not in g["counts"]:
                    continue
                gv, cv = g["counts"][label], c["counts"][label]
                if gv == 0 and cv == 0:
                    continue
                rows.append({"run": name, "kernel": c["kernel"], "count": label, "gpu": gv, "cpu": cv})
    def share(selected):
        return {"equal": sum(r["gpu"] == r["cpu"] for r in selected), "of": len(selected)}
    summary = {"all": share(rows), "target": share([r for r in rows if r["count"] in TARGET]),
               "occupancy": share(occupancy)}
    return rows + occupancy, summary


def gpu_record(gpu_dir: Path, cpu_dir: Path) -> dict:
    """The GPU's counts of the launches the CPU counts: what test_cpu_profile.py compares with."""
    record = {}
    for jsonl in sorted(cpu_dir.glob("*.jsonl")):
        csv_path = gpu_dir / f"{jsonl.stem}.csv"
        if csv_path.exists():
            record[jsonl.stem] = [{"kernel": g["kernel"], "counts": g["counts"], "registers": g["registers"]}
                                  for g, _ in pair(gpu_launches(csv_path), cpu_launches(jsonl))]
    return record


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cpu")
    c.add_argument("out", type=Path)
    lab = sub.add_parser("lab-files", help="write the transpose lab's versions as task folders (for the GPU run)")
    lab.add_argument("out", type=Path)
    m = sub.add_parser("compare")
    m.add_argument("gpu_dir", type=Path)
    m.add_argument("cpu_dir", type=Path)
    m.add_argument("--write", type=Path, help="keep the GPU's counts here (JSON)")
    args = p.parse_args(argv)
    if args.command == "cpu":
        run_cpu(args.out)
        return 0
    if args.command == "lab-files":
        for name, folder in write_lab_files(args.out).items():
            print(f"{name} {folder}")
        return 0
    rows, summary = compare(args.gpu_dir, args.cpu_dir)
    print(f"{'run':38} {'kernel':26} {'count':28} {'GPU':>10} {'CPU':>10}")
    for r in rows:
        mark = "" if r["gpu"] == r["cpu"] else "  <>"
        print(f"{r['run']:38} {r['kernel']:26} {r['count']:28} {r['gpu']:>10} {r['cpu']:>10}{mark}")
    for what, s in summary.items():
        print(f"{what}: {s['equal']} of {s['of']} counts equal ({100 * s['equal'] / max(1, s['of']):.1f}%)")
    if args.write:
        args.write.write_text(json.dumps(gpu_record(args.gpu_dir, args.cpu_dir), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
