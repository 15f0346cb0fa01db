#!/usr/bin/env python3
"""make profile TASK=transpose: why a kernel is slow, counted on the CPU.

    python3 tools/profile.py --harness build/on-cpu/starter/racecheck/harness --task transpose \\
        [--reference bench/profile-reference.json] [--json FILE]

The CPU backend runs every thread of every block and sees every address
(cpu/README.md, "Performance counters"), so it counts what decides a
kernel's speed on a GPU: how many 32-byte sectors each warp's global loads
and stores touch (coalescing), how many passes each warp's shared-memory
access needs (bank conflicts), how many lanes of a warp are active at each
access (divergence), and how many blocks fit on one SM (occupancy, from
tools/gpu.toml). It runs the task once, on its profile shape, with the
harness built with --racecheck (make test builds it), and prints per kernel
a short table beside the solution's numbers for the same shape, then one
sentence per finding, naming the line.

The counts are the GPU's own wherever the access pattern does not depend on
timing (docs/gpu-runs/2026-11-28-h200-issue-31.md compares them with Nsight
Compute). Not counted: registers (the CPU compiler is not nvcc; `make
resources` reports them), caches, and instructions other than memory accesses.

Exit status: 0 profiled; 1 the task could not be profiled (not implemented,
wrong, or it failed: make test says why); 2 bad arguments.
Standard library only: it ships with the starter.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
REGISTRY = TOOLS.parent / "harness" / "registry.json"
REFERENCE = TOOLS.parent / "bench" / "profile-reference.json"
RUN_TIMEOUT = 300  # seconds: the profile shapes take a few on two cores

# A site is reported when it does this badly (and the task does worse than the solution overall).
POOR_EFFICIENCY = 0.5  # useful sectors (or shared-memory passes) / those used
POOR_ACTIVE = 0.5      # active lanes / the warp's lanes
LOW_OCCUPANCY = 50.0   # percent of the SM's warp slots
MAX_SITES = 3          # sentences per kind of finding


class ProfileError(Exception):
    """Why the task could not be profiled, in one line."""


@dataclass
class Totals:
    """Counts summed over warp-level instructions (a request each)."""
    instructions: int = 0
    lanes: int = 0
    lane_slots: int = 0
    divergent: int = 0
    used: int = 0   # sectors (global) or wavefronts (shared)
    ideal: int = 0  # the same if the bytes were packed (global) or conflict-free (shared)

    def merge(self, other: "Totals") -> None:
        for name in ("instructions", "lanes", "lane_slots", "divergent", "used", "ideal"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def add(self, site: dict) -> None:
        self.instructions += site["instructions"]
        self.lanes += site["lanes"]
        self.lane_slots += site["lane_slots"]
        self.divergent += site["divergent"]
        self.used += site.get("sectors", site.get("wavefronts", 0))
        self.ideal += site.get("ideal_sectors", site.get("ideal_wavefronts", 0))

    def per_request(self) -> float:
        return self.used / self.instructions if self.instructions else 0.0

    def ideal_per_request(self) -> float:
        return self.ideal / self.instructions if self.instructions else 0.0

    def efficiency(self) -> float | None:
        return self.ideal / self.used if self.used else None

    def active(self) -> float | None:
        return self.lanes / self.lane_slots if self.lane_slots else None


KINDS = ("global load", "global store", "shared load", "shared store", "global atomic", "shared atomic")


@dataclass
class Site:
    at: str
    kind: str
    totals: Totals


@dataclass
class Kernel:
    name: str
    launched_at: str
    threads: int
    shared_bytes: int
    launches: int = 0
    kinds: dict[str, Totals] = field(default_factory=dict)
    sites: dict[tuple[str, str], Site] = field(default_factory=dict)
    occupancy: dict | None = None

    def total(self, *kinds: str) -> Totals:
        t = Totals()
        for k in kinds:
            if k in self.kinds:
                t.merge(self.kinds[k])
        return t


_OPS = {tuple(kind.split()) for kind in KINDS}  # (space, op)
_COUNTS = ("instructions", "lanes", "lane_slots", "divergent")


def checked(launches: list) -> list[dict]:
    """The launches as the runtime writes them, or ValueError naming what is not: the file is the program's, and
    the grader reads it from a submission's run."""
    def count(v, most: int = 1 << 62) -> int:
        if type(v) is not int or not 0 <= v <= most:
            raise ValueError(f"not a count: {str(v)[:40]}")
        return v

    def text(v, most: int = 300) -> str:
        if not isinstance(v, str) or len(v) > most:
            raise ValueError("not a short text")
        return v

    if not isinstance(launches, list):
        raise ValueError("not a list of launches")
    for launch in launches:
        if not isinstance(launch, dict) or not isinstance(launch.get("sites"), list):
            raise ValueError("a launch without sites")
        text(launch.get("kernel")), text(launch.get("launched_at"))
        block = launch.get("block")
        if not isinstance(block, list) or len(block) != 3 or any(count(b, 1024) < 1 for b in block) \
                or block[0] * block[1] * block[2] > 1024:
            raise ValueError("not a block of 1 to 1024 threads")
        count(launch.get("static_shared_bytes"), 1 << 24), count(launch.get("dynamic_shared_bytes"), 1 << 24)
        if "too_many_accesses" in launch:
            count(launch["too_many_accesses"])
        for site in launch["sites"]:
            if not isinstance(site, dict) or (site.get("space"), site.get("op")) not in _OPS:
                raise ValueError("a site of no known memory space and operation")
            text(site.get("at"))
            for name in _COUNTS + (("wavefronts", "ideal_wavefronts") if site["space"] == "shared"
                                   else ("sectors", "ideal_sectors")):
                count(site.get(name))
            if site["instructions"] < 1:
                raise ValueError("a site without instructions")
    return launches


def too_many(launches: list[dict]) -> str:
    """Why the launches were not counted ("" when they were): a block made more accesses than the runtime keeps."""
    for launch in launches:
        if "too_many_accesses" in launch:
            return (f"{launch['kernel']} (launched at {launch['launched_at']}) made more than "
                    f"{launch['too_many_accesses']:,} memory accesses in one block: too many to count (the counters "
                    "keep a block's accesses until it ends); with fewer elements per block it can be counted")
    return ""


def summarize(launches: list[dict], gpu=None, occupancy_rules=None) -> list[Kernel]:
    """The launches' counts per kernel (in launch order) and per source line."""
    kernels: dict[str, Kernel] = {}
    for launch in launches:
        block = launch["block"]
        threads = block[0] * block[1] * block[2]
        shared = launch["static_shared_bytes"] + launch["dynamic_shared_bytes"]
        k = kernels.setdefault(launch["kernel"], Kernel(launch["kernel"], launch["launched_at"], threads, shared))
        k.launches += 1
        for s in launch["sites"]:
            kind = f"{s['space']} {s['op']}"
            k.kinds.setdefault(kind, Totals()).add(s)
            k.sites.setdefault((s["at"], kind), Site(s["at"], kind, Totals())).totals.add(s)
        if gpu is not None and k.occupancy is None:
            k.occupancy = occupancy_of(gpu, occupancy_rules, threads, shared)
    return list(kernels.values())


def occupancy_of(gpu, rules, threads: int, shared_bytes: int) -> dict | None:
    """Blocks per SM by threads, shared memory and the block limit (registers unknown on the CPU), and the most
    registers per thread that keep it."""
    try:
        o = rules.occupancy(gpu, threads, 1, shared_bytes / 1024)
    except ValueError:
        return None
    most = 1
    for r in range(1, gpu.sm.max_registers_per_thread + 1):
        if rules.occupancy(gpu, threads, r, shared_bytes / 1024).blocks < o.blocks:
            break
        most = r
    return {"blocks": o.blocks, "percent": o.percent(gpu), "limiter": o.limiter, "registers_up_to": most}


def task_numbers(kernels: list[Kernel]) -> dict:
    """The task's numbers over all its kernels: what the table shows and profile-reference.json stores. The
    ratios are used / needed: 1.0 is the ideal, 8.0 eight times the memory traffic (or passes) needed."""
    def total(kinds) -> Totals:
        t = Totals()
        for k in kernels:
            t.merge(k.total(*kinds))
        return t

    def used_per_needed(kinds) -> float | None:
        t = total(kinds)
        return round(t.used / t.ideal, 2) if t.ideal else None

    main = max(kernels, key=lambda k: sum(t.instructions for t in k.kinds.values()), default=None)
    return {
        "global_load_sectors_per_needed": used_per_needed(["global load"]),
        "global_store_sectors_per_needed": used_per_needed(["global store"]),
        "shared_passes_per_needed": used_per_needed(["shared load", "shared store"]),
        "active_lanes": _round(total(list(KINDS)).active()),
        "occupancy_percent": round(main.occupancy["percent"], 1) if main and main.occupancy else None,
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


# --- the findings, in words -------------------------------------------------------------------------------

def _worse(mine: float | None, solution: float | None, higher_is_worse: bool = True) -> bool:
    """Whether the task does clearly worse than the solution on one number (no solution number: yes)."""
    if mine is None:
        return False
    if solution is None:
        return True
    return mine > 1.1 * solution if higher_is_worse else mine < 0.9 * solution


def findings(kernels: list[Kernel], task: str, reference: dict | None) -> list[str]:
    """One sentence per finding, worst first, each naming its line."""
    mine = task_numbers(kernels)
    ref = reference or {}
    out: list[str] = []
    for kind, number, verb in (("global load", "global_load_sectors_per_needed", "loads"),
                               ("global store", "global_store_sectors_per_needed", "stores")):
        if not _worse(mine[number], ref.get(number)):
            continue
        sites = [s for k in kernels for s in k.sites.values() if s.kind == kind
                 and (s.totals.efficiency() or 1) <= POOR_EFFICIENCY]
        for s in sorted(sites, key=lambda s: s.totals.efficiency() or 1)[:MAX_SITES]:
            t = s.totals
            out.append(f"your {verb} touch {t.per_request():.1f} sectors per warp request where "
                       f"{t.ideal_per_request():.1f} would do ({s.at}): {_coalescing_advice(task, verb)}")
    if _worse(mine["shared_passes_per_needed"], ref.get("shared_passes_per_needed")):
        sites = [s for k in kernels for s in k.sites.values() if s.kind in ("shared load", "shared store")
                 and (s.totals.efficiency() or 1) <= POOR_EFFICIENCY]
        for s in sorted(sites, key=lambda s: s.totals.efficiency() or 1)[:MAX_SITES]:
            t = s.totals
            ways = t.used / t.ideal if t.ideal else t.per_request()
            what = "loads" if s.kind.endswith("load") else "stores"
            out.append(f"your shared-memory {what} need {t.per_request():.1f} passes per warp request where "
                       f"{t.ideal_per_request():.1f} would do, a {ways:.0f}-way bank conflict ({s.at}): lanes of a "
                       "warp hit different words of one bank (words 32 apart, e.g. a column of a [32][32] float "
                       "tile); pad each row by one element ([32][33]) so a column spreads over all 32 banks")
    if _worse(mine["active_lanes"], ref.get("active_lanes"), higher_is_worse=False):
        total = sum(t.instructions for k in kernels for t in k.kinds.values()) or 1
        by_line: dict[str, Totals] = {}  # a line's loads, stores and atomics together
        for k in kernels:
            for s in k.sites.values():
                by_line.setdefault(s.at, Totals()).merge(s.totals)
        lines = [(at, t) for at, t in by_line.items() if (t.active() or 1) <= POOR_ACTIVE and t.divergent > 0
                 and t.instructions >= 0.05 * total]
        for at, t in sorted(lines, key=lambda item: item[1].active() or 1)[:MAX_SITES]:
            out.append(f"only {t.lanes / t.instructions:.1f} of {t.lane_slots / t.instructions:.0f} lanes of a warp "
                       f"are active at {at} on average ({100 * t.divergent / t.instructions:.0f}% of its warp "
                       "steps are divergent): the branch splits warps, and a warp runs both sides one after "
                       "the other; let whole warps take the same side (e.g. branch on threadIdx.x / 32, or keep "
                       "the active threads contiguous: tid < s, not tid % (2 * s) == 0)")
    ref_occ = ref.get("occupancy_percent")
    for k in kernels:
        o = k.occupancy
        if o and o["percent"] < LOW_OCCUPANCY and (ref_occ is None or o["percent"] < ref_occ):
            out.append(f"{k.name} (launched at {k.launched_at}) fits {o['blocks']} blocks of {k.threads} threads "
                       f"on an SM, {o['percent']:.0f}% of its warp slots, limited by {o['limiter']}: "
                       + ("use blocks of 128 to 256 threads" if o["limiter"] in ("blocks", "threads")
                          else "use less shared memory per block"))
    return out


def _coalescing_advice(task: str, verb: str) -> str:
    if task == "transpose" and verb == "stores":
        return ("write through the shared tile so that consecutive threads (threadIdx.x) store consecutive "
                "addresses")
    return (f"make consecutive threads (threadIdx.x) {verb[:-1]} consecutive addresses: the index of the "
            "fastest-varying thread should move along a row, not down a column")


# --- the table --------------------------------------------------------------------------------------------

def table(kernels: list[Kernel], reference: dict | None) -> str:
    """The task's numbers beside the solution's: used / needed (1.0x is ideal), then shares."""
    mine = task_numbers(kernels)
    ref = reference or {}
    rows = [("global loads: sectors used / needed", "global_load_sectors_per_needed", _times),
            ("global stores: sectors used / needed", "global_store_sectors_per_needed", _times),
            ("shared memory: passes used / needed", "shared_passes_per_needed", _times),
            ("active lanes at memory accesses", "active_lanes", lambda v: _pct(v)),
            ("occupancy (registers aside)", "occupancy_percent", lambda v: _pct(v, 100))]
    lines = [f"{'':40}{'yours':>10}{'solution':>10}"]
    for label, key, fmt in rows:
        if mine.get(key) is None and ref.get(key) is None:
            continue
        lines.append(f"{label:40}{fmt(mine.get(key)):>10}{fmt(ref.get(key)):>10}")
    return "\n".join(lines)


def _times(v) -> str:
    return "-" if v is None else f"{v:.1f}x"


def kernel_lines(kernels: list[Kernel]) -> str:
    out = []
    for k in kernels:
        o = k.occupancy
        occ = (f"{o['blocks']} blocks/SM ({o['percent']:.0f}%, limited by {o['limiter']}; registers permitting: up "
               f"to {o['registers_up_to']} per thread keep it)") if o else "occupancy unknown"
        out.append(f"{k.name} (launched at {k.launched_at}): {k.launches} launch(es), {k.threads} threads/block, "
                   f"{k.shared_bytes} bytes of shared memory/block, {occ}")
        for s in sorted(k.sites.values(), key=lambda s: (_line_key(s.at), s.kind)):
            t = s.totals
            what = "sectors" if s.kind.startswith("global") else "passes"
            out.append(f"  {s.at:22} {s.kind:14} {t.instructions:>9} requests  {t.per_request():5.1f} {what}/request "
                       f"(ideal {t.ideal_per_request():.1f})  {100 * (t.active() or 0):3.0f}% lanes active")
    return "\n".join(out)


def _line_key(at: str) -> tuple:
    name, _, line = at.rpartition(":")
    return (name, int(line) if line.isdigit() else 0)


def _pct(v, scale: float = 1.0) -> str:
    return "-" if v is None else f"{v * 100 / scale:.0f}%"


# --- lines of code addresses ------------------------------------------------------------------------------
# Where the program cannot run addr2line itself (the grader's sandbox), the counts name code addresses
# ("pc:0x1a2b", offsets into the harness) and are given lines afterwards; and the line table (readelf's) tells
# the program which accesses share a line, for the 16-byte copies it merges.

_RUNTIME_FRAMES = ("/cudacpu/", "/starter/cpu/", "cuda_runtime.h", "/usr/include/", "??")


def line_table(readelf_text: str) -> str:
    """`readelf --debug-dump=decodedline` as CUDA_CPU_PROFILE_LINES wants it: "0x1a2b file.cu:12" per row, for the
    rows of .cu and .h files (the kernels and what they inline)."""
    rows = []
    for line in readelf_text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0].endswith((".cu", ".h")) and parts[1].isdigit() and parts[2].startswith("0x"):
            try:
                rows.append((int(parts[2], 16), f"{os.path.basename(parts[0])}:{parts[1]}"))
            except ValueError:
                continue
    return "".join(f"{hex(a)} {place}\n" for a, place in sorted(rows))


def places_from_addr2line(text: str) -> dict[str, str]:
    """`addr2line -a -i -e PROGRAM 0x...` output: each address's innermost frame outside the CPU backend's own
    headers, as "file.cu:12" ("" when none)."""
    places, address = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("0x") and ":" not in line:
            address = int(line, 16)
            places.setdefault(address, "")
            continue
        if address is None or places[address]:
            continue
        frame = line.split(" (discriminator")[0]
        name, _, number = frame.rpartition(":")
        if name and number.isdigit() and number != "0" and not any(r in frame for r in _RUNTIME_FRAMES):
            places[address] = f"{os.path.basename(name)}:{number}"
    return {hex(a): p for a, p in places.items()}


def resolve_pcs(launches: list[dict], symbolize) -> None:
    """Gives the sites named by a code address ("pc:0x1a2b", a return address) their line, in place, with
    `symbolize(["0x1a2a", ...]) -> {"0x1a2a": "file.cu:12"}` (the call's own instruction, one byte back)."""
    pcs = {s["at"][3:] for launch in launches for s in launch["sites"] if s["at"].startswith("pc:")}
    wanted = sorted(pc for pc in pcs if re.fullmatch(r"0x[0-9a-f]{1,16}", pc))
    if not wanted:
        for launch in launches:
            for s in launch["sites"]:
                if s["at"].startswith("pc:"):
                    s["at"] = "an unknown line"
        return
    calls = {pc: hex(int(pc, 16) - 1) for pc in wanted}
    found = symbolize(sorted(set(calls.values())))
    for launch in launches:
        for s in launch["sites"]:
            if s["at"].startswith("pc:"):
                s["at"] = found.get(calls.get(s["at"][3:], "")) or "an unknown line"


def addr2line_here(harness: Path):
    """A symbolizer for resolve_pcs that runs addr2line on this machine."""
    def symbolize(addresses: list[str]) -> dict[str, str]:
        try:
            done = subprocess.run(["addr2line", "-a", "-i", "-e", str(harness), *addresses], capture_output=True,
                                  text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        return places_from_addr2line(done.stdout)
    return symbolize


# --- running the harness ----------------------------------------------------------------------------------

def task_entry(task: str) -> dict:
    try:
        tasks = json.loads(REGISTRY.read_text())["tasks"]
    except (OSError, ValueError, KeyError) as e:
        raise ProfileError(f"cannot read the task registry {REGISTRY}: {e}") from None
    for t in tasks:
        if t["id"] == task:
            return t
    raise ProfileError(f"no task {task!r}; the tasks are {', '.join(t['id'] for t in tasks)}")


def profile_dtype(entry: dict) -> str:
    """The type the profile runs: float32 where the task has it (the graded timings' type), else its first."""
    return "float32" if "float32" in entry["dtypes"] else entry["dtypes"][0]


def run_profile(harness: Path, task: str, dtype: str, timeout: float = RUN_TIMEOUT,
                env: dict | None = None) -> list[dict]:
    """Runs the task's profile case with counting on; the launches' JSON lines."""
    if not Path(harness).exists():
        raise ProfileError(f"{harness} does not exist: run make test first (it builds the counting harness)")
    with tempfile.TemporaryDirectory(prefix="profile-") as tmp:
        out, cases = Path(tmp) / "launches.jsonl", Path(tmp) / "cases.jsonl"
        cmd = [str(harness), "--task", task, "--dtype", dtype, "--suite", "profile", "--check-only",
               "--check-runs", "1", "--fixed-placement", "--no-limits", "--reference", "cpu", "--seed", "1",
               "--json", str(cases)]
        run_env = {**os.environ, **(env or {}), "CUDA_CPU_PROFILE": str(out)}
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=run_env)
        except subprocess.TimeoutExpired:
            raise ProfileError(f"{task} ran longer than {timeout:.0f} s on its profile shape: make test first "
                               "(does a kernel hang?)") from None
        except OSError as e:
            raise ProfileError(f"cannot run {harness}: {e.strerror or e}; make clean, then make test, builds it "
                               "again") from None
        launches = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        records = [json.loads(line) for line in cases.read_text().splitlines()] if cases.exists() else []
    case = next((r for r in records if r.get("record") == "case"), None)
    if case is None:
        last = next((l for l in reversed(done.stderr.splitlines() + done.stdout.splitlines()) if l.strip()), "")
        raise ProfileError(f"the harness did not run {task}: {last.strip() or f'exit status {done.returncode}'}")
    status, message = case["status"], case.get("message") or ""
    where = f"{task} ({dtype}, {case.get('shape_text', '')})"
    if status == "not_implemented":
        raise ProfileError(f"{task} is not implemented yet: nothing to profile")
    if status == "build_error" and message.startswith("needs a GPU"):
        raise ProfileError(f"{task} {message}, and the counters run on the CPU backend: make bench on a GPU "
                           "machine, or ncu there, shows how it performs")
    if status != "ok":
        raise ProfileError(f"{where} is {status.replace('_', ' ')}"
                           f"{': ' + message.splitlines()[0] if message else ''}; its counts would describe a "
                           f"broken kernel: make test TASK={task} says what to fix first")
    if not launches:
        raise ProfileError(f"{task} launched no kernel that was counted: is {harness} built with --racecheck "
                           "(make test builds it)?")
    try:
        checked(launches)
    except ValueError as e:
        raise ProfileError(f"the counts the harness wrote are not as the CPU backend writes them ({e})") from None
    if too_many(launches):
        raise ProfileError(too_many(launches))
    resolve_pcs(launches, addr2line_here(harness))
    return launches


def load_reference(path: Path, task: str) -> dict | None:
    try:
        return json.loads(Path(path).read_text())["tasks"].get(task)
    except (OSError, ValueError, KeyError, AttributeError):
        return None


@functools.lru_cache(maxsize=1)
def load_occupancy():
    """tools/occupancy.py and the grading GPU of tools/gpu.toml, or (None, None, why); read once."""
    spec = importlib.util.spec_from_file_location("starter_occupancy", TOOLS / "occupancy.py")
    rules = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = rules
    spec.loader.exec_module(rules)
    try:
        return rules, rules.load_gpu(), None
    except rules.GpuError as e:
        return None, None, str(e)


def profile_task(harness: Path, task: str, reference_path: Path = REFERENCE) -> dict:
    """Everything make profile prints, as data: the kernels, the table, the findings."""
    entry = task_entry(task)
    dtype = profile_dtype(entry)
    launches = run_profile(harness, task, dtype)
    rules, gpu, why = load_occupancy()
    kernels = summarize(launches, gpu, rules)
    reference = load_reference(reference_path, task)
    shape = entry["shape_sets"]["profile"][0]
    return {"task": task, "dtype": dtype, "shape": shape, "kernels": kernels, "numbers": task_numbers(kernels),
            "reference": reference, "findings": findings(kernels, task, reference), "occupancy_note": why,
            "launches": launches}


def write_reference(harness: Path, kernels: Path, path: Path) -> None:
    """The solution's numbers per task (no line, no kernel name: they ship to students), stamped with the
    hash of the solution's files (as handout/record.py hashes them)."""
    lines = "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n"
                    for f in sorted(Path(kernels).glob("*.cu"), key=lambda f: f.name.encode()))
    tasks = {}
    for entry in json.loads(REGISTRY.read_text())["tasks"]:
        try:
            launches = run_profile(harness, entry["id"], profile_dtype(entry))
        except ProfileError as e:
            print(f"{entry['id']}: not recorded ({e})", file=sys.stderr)
            continue
        rules, gpu, _ = load_occupancy()
        tasks[entry["id"]] = {"dtype": profile_dtype(entry), "shape": entry["shape_sets"]["profile"][0],
                              **task_numbers(summarize(launches, gpu, rules))}
    record = {"what": "the solution's performance counters on the CPU backend (make profile-reference)",
              "solution_sha256": hashlib.sha256(lines.encode()).hexdigest(), "tasks": tasks}
    Path(path).write_text(json.dumps(record, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tools/profile.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--harness", required=True, type=Path, help="the harness built with --racecheck")
    p.add_argument("--task", help="one task id, e.g. transpose")
    p.add_argument("--reference", type=Path, default=REFERENCE, help="the solution's numbers (%(default)s)")
    p.add_argument("--json", type=Path, help="also write the launches' counts and the findings to this file")
    p.add_argument("--write-reference", type=Path, metavar="KERNELS",
                   help="(the course's) profile every task of the solution in KERNELS and write --reference")
    args = p.parse_args(argv)
    if args.write_reference:
        write_reference(args.harness, args.write_reference, args.reference)
        return 0
    if not args.task:
        p.error("--task is required")
    try:
        result = profile_task(args.harness, args.task, args.reference)
    except ProfileError as e:
        print(f"make profile: {e}", file=sys.stderr)
        return 1
    print(f"{result['task']} ({result['dtype']}, {result['shape']}), counted on the CPU "
          f"as an {_gpu_name()} would run it:")
    print(kernel_lines(result["kernels"]))
    print()
    print(table(result["kernels"], result["reference"]))
    if result["reference"] is None:
        print("(no solution numbers: bench/profile-reference.json is missing)")
    if result["occupancy_note"]:
        print(f"(occupancy not computed: {result['occupancy_note']})")
    print()
    if result["findings"]:
        for sentence in result["findings"]:
            print(f"- {sentence}")
    else:
        print("No finding: the accesses are as coalesced, conflict-free and converged as the solution's.")
    if args.json:
        try:
            args.json.write_text(json.dumps({k: v for k, v in result.items() if k != "kernels"}, indent=1))
        except OSError as e:
            print(f"make profile: cannot write {args.json}: {e.strerror or e}", file=sys.stderr)
            return 1
    return 0


def _gpu_name() -> str:
    _, gpu, _ = load_occupancy()
    return gpu.name if gpu else "NVIDIA GPU"


if __name__ == "__main__":
    sys.exit(main())
