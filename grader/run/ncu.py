"""Nsight Compute (ncu) for `make profile GPU=1`: where it is installed, its command for one task's profile case,
and its CSV read into the numbers the student's table shows.

The counts are the same ones solution/tests/profile_agreement.py compares with the CPU backend's (issue 31's
record in docs/gpu-runs/); the table has the CPU table's rows (used / needed), beside the solution's from the same
GPU.
"""
from __future__ import annotations

import csv
import glob
import os
import re
import shutil
from pathlib import Path

# The metrics asked for, by what they count (summed over a task's launches). What the accesses need (the CPU's
# "ideal") comes from the bytes the threads asked for: a request needs at least one sector (one pass), and every
# 32 bytes (128 bytes through shared memory's 32 banks) at least one more.
COUNTS = {
    "global load bytes": ["sm__sass_data_bytes_mem_global_op_ld.sum"],
    "global store bytes": ["sm__sass_data_bytes_mem_global_op_st.sum"],
    "shared load bytes": ["sm__sass_data_bytes_mem_shared_op_ld.sum"],
    "shared store bytes": ["sm__sass_data_bytes_mem_shared_op_st.sum"],
    "global load requests": ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"],
    "global load sectors": ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"],
    "global store requests": ["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"],
    "global store sectors": ["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"],
    "global atomic requests": ["l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
                               "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"],
    "shared load requests": ["smsp__sass_inst_executed_op_shared_ld.sum"],
    "shared store requests": ["smsp__sass_inst_executed_op_shared_st.sum"],
    "shared load wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"],
    "shared store wavefronts": ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"],
    "shared load bank conflicts": ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"],
    "shared store bank conflicts": ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"],
    # active lanes at memory accesses: the load/store unit's instructions (loads, stores, atomics and warp shuffles),
    # the lanes that executed them (predicated on) and the warp-level count. (ncu's thread-level count of "memory"
    # instructions is not per access: twice the lanes of a full warp's loads in the naive transpose, H200 2026-11-28.)
    "memory lanes": ["smsp__thread_inst_executed_pipe_lsu_pred_on.sum"],
    "memory instructions": ["smsp__inst_executed_pipe_lsu.sum"],
}
LAUNCH = {"registers": "launch__registers_per_thread",
          "occupancy_percent": "sm__maximum_warps_per_active_cycle_pct",  # theoretical, as the CPU's rules give
          "achieved_occupancy_percent": "sm__warps_active.avg.pct_of_peak_sustained_active"}
METRICS = sorted({m for ms in COUNTS.values() for m in ms} | set(LAUNCH.values()))
MAX_LAUNCHES = 64  # the profile case launches a handful; more rows are not the harness's
MAX_CSV_BYTES = 8 * 2**20


def find_ncu() -> Path | None:
    """The real ncu program (not the toolkit's launcher script, which looks for its install folder by paths the
    sandbox does not have): the newest Nsight Compute beside the toolkit of `ncu` or `nvcc` on PATH, or under
    /opt/nvidia; its folder is what the sandbox binds."""
    roots = []
    for tool in ("ncu", "nvcc"):
        found = shutil.which(tool)
        if found:
            roots += [Path(found).parent.parent, Path(found).resolve().parent.parent]
    candidates = []
    for root in dict.fromkeys(roots):
        candidates += glob.glob(str(root / "nsight-compute*" / "ncu"))
    candidates += glob.glob("/opt/nvidia/nsight-compute/*/ncu")
    found = [Path(os.path.realpath(p)) for p in candidates if os.access(p, os.X_OK) and Path(p).is_file()]
    if not found:
        return None
    return max(found, key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.name)] or [0])


def command(ncu: Path, harness: Path, task: str, dtype: str, seed: int) -> list[str]:
    """ncu's raw page for every kernel of the task's profile case, run once (clocks left as they are: the counts
    are events, which clocks do not change)."""
    return [str(ncu), "--clock-control", "none", "--csv", "--page", "raw", "--metrics", ",".join(METRICS),
            str(harness), "--task", task, "--dtype", dtype, "--suite", "profile", "--check-only", "--check-runs", "1",
            "--fixed-placement", "--no-limits", "--reference", "cpu", "--seed", str(seed)]


def kernel_base(name: str) -> str:
    """'void <unnamed>::transpose_vector<float, 64, 16>(const T1 *, ...)' -> 'transpose_vector'."""
    name = re.sub(r"^void ", "", name).replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    return re.sub(r"<.*", "", name.split("(")[0]).split("::")[-1].strip()


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def launches(text: str) -> list[dict]:
    """Per launch, from ncu's raw page (--csv --page raw): the kernel's name, the counts of COUNTS (a count ncu did
    not give is left out) and the launch's numbers of LAUNCH (None where not given). Anything else in the text
    (the program's own output, ncu's ==PROF== lines) is passed over."""
    rows = list(csv.reader([line for line in text[:MAX_CSV_BYTES].splitlines() if line.startswith('"')]))
    if not rows or "Kernel Name" not in rows[0]:
        return []
    head, out = rows[0], []
    for row in rows[2:2 + MAX_LAUNCHES]:  # the second row holds the units
        d = dict(zip(head, row))
        counts = {}
        for label, metrics in COUNTS.items():
            values = [_number(d.get(m, "")) for m in metrics]
            if all(v is not None and v >= 0 for v in values):
                counts[label] = int(round(sum(values)))
        launch = {"kernel": kernel_base(d.get("Kernel Name", ""))[:200], "counts": counts}
        launch.update({key: _number(d.get(metric, "")) for key, metric in LAUNCH.items()})
        out.append(launch)
    return out


def task_numbers(found: list[dict]) -> dict:
    """A task's numbers over its launches, with the keys of make profile's table on the CPU (starter/tools/profile.py's
    task_numbers): used / needed for global sectors and shared-memory passes (1.0 is the ideal), active lanes at
    memory accesses; then what only the GPU knows: theoretical and achieved occupancy and registers (the busiest
    kernel's), bank conflicts, sectors per request."""
    total = {label: sum(launch["counts"].get(label, 0) for launch in found) for label in COUNTS}

    def used_per_needed(used: str, requests: str, byte_counts: str, unit: int) -> float | None:
        needed = max(total[requests], total[byte_counts] / unit)
        return round(total[used] / needed, 2) if needed else None

    busiest = max(found, key=lambda launch: sum(launch["counts"].values()), default=None)
    lanes = (min(1.0, total["memory lanes"] / (32 * total["memory instructions"]))
             if total["memory instructions"] else None)
    shared = {key: total[f"shared load {key}"] + total[f"shared store {key}"]
              for key in ("requests", "wavefronts", "bytes", "bank conflicts")}
    needed_passes = max(shared["requests"], shared["bytes"] / 128)
    return {
        "global_load_sectors_per_needed": used_per_needed("global load sectors", "global load requests",
                                                          "global load bytes", 32),
        "global_store_sectors_per_needed": used_per_needed("global store sectors", "global store requests",
                                                           "global store bytes", 32),
        "shared_passes_per_needed": round(shared["wavefronts"] / needed_passes, 2) if needed_passes else None,
        "active_lanes": round(lanes, 3) if lanes is not None else None,
        "occupancy_percent": busiest.get("occupancy_percent") if busiest else None,
        "achieved_occupancy_percent": busiest.get("achieved_occupancy_percent") if busiest else None,
        "registers": busiest.get("registers") if busiest else None,
        "shared_bank_conflicts": shared["bank conflicts"] if shared["requests"] else None,
        "global_load_sectors_per_request": (round(total["global load sectors"] / total["global load requests"], 2)
                                            if total["global load requests"] else None),
        "global_store_sectors_per_request": (round(total["global store sectors"] / total["global store requests"], 2)
                                             if total["global store requests"] else None),
        "kernels": sorted({launch["kernel"] for launch in found}),
        "launches": len(found),
    }

HARNESS_SOURCES = Path(__file__).resolve().parents[2] / "starter" / "harness"


def harness_kernels(sources: Path = HARNESS_SOURCES) -> frozenset[str]:
    """The harness's own kernels (inputs, checks, the float64 references, the cache flush), by name: what runs in
    the profile case beside the student's, which the table leaves out."""
    names = set()
    for path in sources.rglob("*.cu"):
        names |= set(re.findall(r"__global__\s+void\s+(\w+)", path.read_text(errors="replace")))
    return frozenset(names)


def declared_kernels(source: str) -> frozenset[str]:
    """The kernels a task file declares (`__global__ ... name(`), by name."""
    source = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S))
    return frozenset(re.findall(r"__global__[^;{(]*?\b(\w+)\s*\(", source))


def own_launches(found: list[dict], declared: frozenset[str] = frozenset()) -> list[dict]:
    """The launches of the student's kernels: those the task's file declares; where no name could be read from it
    (kernels made by macros), all but the harness's own (a kernel named as one of the harness's is left out then)."""
    if declared:
        return [launch for launch in found if launch["kernel"] in declared]
    harness = harness_kernels()
    return [launch for launch in found if launch["kernel"] not in harness]


def errors(text: str) -> str:
    """ncu's own error lines (==ERROR==, ==WARNING== about permissions), joined, at most 400 characters."""
    said = [line.strip() for line in text.splitlines() if line.startswith(("==ERROR==", "==PROF== Error"))]
    return " ".join(said)[:400]


# The table's rows: the CPU table's first (the same labels and keys), then the GPU's own. The words of a finding,
# where the student's number is clearly worse than the solution's.
ROWS = (("global_load_sectors_per_needed", "global loads: sectors used / needed", "x",
         "your global loads use {mine} the sectors they need where the solution's use {theirs}: consecutive threads "
         "should read consecutive addresses"),
        ("global_store_sectors_per_needed", "global stores: sectors used / needed", "x",
         "your global stores use {mine} the sectors they need where the solution's use {theirs}: consecutive threads "
         "should write consecutive addresses"),
        ("shared_passes_per_needed", "shared memory: passes used / needed", "x",
         "your shared-memory accesses take {mine} the passes they need where the solution's take {theirs}: threads "
         "of a warp hit the same bank (pad the tile by one column)"),
        ("active_lanes", "active lanes at memory accesses", "%",
         "only {mine} of each warp's lanes take part in its memory accesses where the solution's {theirs} do: threads "
         "of a warp take different branches"),
        ("occupancy_percent", "occupancy, theoretical", "%1",
         "your busiest kernel can keep {mine} of the SM's warp slots busy where the solution's keeps {theirs}: fewer "
         "registers, less shared memory per block or another block size raise it"),
        ("achieved_occupancy_percent", "occupancy, achieved", "%1", ""),
        ("registers", "registers per thread", "n", ""),
        ("shared_bank_conflicts", "shared memory: bank conflicts", "n", ""))
HIGHER_IS_WORSE = {"global_load_sectors_per_needed", "global_store_sectors_per_needed", "shared_passes_per_needed"}
FINDING_KEYS = HIGHER_IS_WORSE | {"active_lanes", "occupancy_percent"}


def show(value, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "x":
        return f"{value:.1f}x"
    if unit == "%":
        return f"{100 * value:.0f}%"
    if unit == "%1":
        return f"{value:.0f}%"
    return f"{value:,.0f}"  # a count


def rows(mine: dict, theirs: dict) -> list[list[str]]:
    """The table's rows as the client prints them: label, yours, the solution's (a row neither has is left out)."""
    return [[label, show(mine.get(key), unit), show(theirs.get(key), unit)] for key, label, unit, _ in ROWS
            if mine.get(key) is not None or theirs.get(key) is not None]


def findings(mine: dict, theirs: dict, task: str) -> list[str]:
    """One sentence per number clearly worse than the solution's (by more than a tenth), pointing to the CPU's
    `make profile`, which names the source line."""
    out = []
    for key, _, unit, words in ROWS:
        a, b = mine.get(key), theirs.get(key)
        if key not in FINDING_KEYS or a is None or b is None:
            continue
        worse = a > 1.1 * b if key in HIGHER_IS_WORSE else a < 0.9 * b
        if worse:
            out.append(words.format(mine=show(a, unit), theirs=show(b, unit))
                       + f" (make profile TASK={task} names the line)")
    return out
