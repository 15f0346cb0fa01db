#!/usr/bin/env python3
"""Writes the small reference cases in data/ and their manifest.

For every task of the harness's registry (read from `harness --list-tasks
--json`, never a second list), every element type and every one of its
`data` shape set, this script draws the inputs with the harness's counter-based
generator (re-implemented here in numpy, bit for bit; see
starter/harness/counter_rng.h), computes the expected output in float64 with
numpy, rounds it to the task's element type, and stores

    cases/<task>/<dtype>/<shape>/<input>.npy and expected.npy

plus manifest.json with each case's seed and the sha256 of every file.

    python3 data/generate.py --harness starter/build/starter/harness           # rewrite data/
    python3 data/generate.py --harness ... --check                             # compare, change nothing
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
from fractions import Fraction
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

U64 = np.uint64
BASE_SEED = 20261121  # the seed of the first case; case i uses BASE_SEED + i
DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32}


# --- the counter-based generator (counter_rng.h) ---------------------------
# Element values, then each float stream's scale and shift; see counter_rng.h.

def mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, on uint64 arrays (arithmetic wraps mod 2^64)."""
    z = z + U64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
    return z ^ (z >> U64(31))


def rng_key(seed: int, stream: int) -> np.uint64:
    stream_mix = mix(np.array([stream], dtype=U64))[0]
    return mix(np.array([U64(seed) ^ stream_mix], dtype=U64))[0]


def rng_scale(key: np.uint64, distribution: str) -> tuple[int, float]:
    """A float stream's scale exponent and shift, from the bits of index 2^64 - 1 (rng_scale in counter_rng.h)."""
    draw = int(mix(np.array([key], dtype=U64) + U64(0xFFFFFFFFFFFFFFFF))[0])  # wraps mod 2^64
    exponent = (draw >> 32) % 9 - 4
    shift = (((draw >> 8) % 256) - 128) / 512 if distribution == "signed_unit" else ((draw >> 8) % 128) / 512
    return exponent, shift


INT32_MAX = 2**31 - 1
INPUT_AVOIDS_I32 = -2147476563  # the harness's int32 output poison, which no input takes


def int_bound(int_range: str, k_terms: int) -> int:
    """B, the largest int32 input magnitude for which the task cannot overflow (registry.h, IntRange)."""
    if int_range == "full":
        return INT32_MAX
    if int_range == "sum_of_two":
        return INT32_MAX // 2
    if int_range == "products_of_k":
        return max(1, math.isqrt(INT32_MAX // max(1, k_terms)))
    raise SystemExit(f"generate.py does not know the int range '{int_range}': add it to int_bound()")


def rng_values(seed: int, stream: int, n: int, dtype: str, distribution: str, bound: int) -> np.ndarray:
    key = rng_key(seed, stream)
    bits = mix(key + np.arange(n, dtype=U64))
    if dtype == "int32":
        high = bits >> U64(32)
        if distribution == "signed_unit":
            r = (high % U64(2 * bound)).astype(np.int64)
            v = np.where(r < bound, r - bound, r - bound + 1)
        else:
            v = (high % U64(bound)).astype(np.int64) + 1
        return np.where(v == INPUT_AVOIDS_I32, -v, v).astype(np.int32)
    if dtype == "float64":  # the full 53-bit significand, scaled and shifted in float64
        if distribution == "signed_unit":
            m = (bits >> U64(11)).astype(np.int64)
            values = (2 * m + 1 - (1 << 53)).astype(np.float64) / 9007199254740992.0
        else:
            m = (bits >> U64(12)).astype(np.int64)
            values = (2 * m + 1).astype(np.float64) / 9007199254740992.0
        exponent, shift = rng_scale(key, distribution)
        return np.ldexp(values + shift, exponent)
    if distribution == "signed_unit":
        m = (bits >> U64(40)).astype(np.int64)
        values = (2 * m + 1 - (1 << 24)) / 16777216.0
    else:
        m = (bits >> U64(41)).astype(np.int64)
        values = (2 * m + 1) / 16777216.0
    exponent, shift = rng_scale(key, distribution)
    return np.ldexp(values + shift, exponent).astype(np.float32)  # rounded to nearest even, as the harness does


# --- what each task computes, in float64 -----------------------------------

def parse_shape(text: str) -> list[int]:
    return [int(d) for d in text.split("x")]


def input_shapes(task: dict, dims: list[int]) -> list[tuple[int, ...]]:
    if task["shape_kind"] == "gemm":
        m, n, k = dims
        return [(m, k), (k, n)]
    return [tuple(dims)] * len(task["inputs"])  # matrix and vector tasks: every input has the case's shape


def exact_sum_of_products(a: np.ndarray, b: np.ndarray) -> float:
    """The correctly rounded float64 of sum a_i b_i, computed exactly in rationals
    (float64 inputs carry 53 significant bits, so their products are not exact
    in float64): the result does not depend on numpy's BLAS or summation order."""
    return float(sum((Fraction(x) * Fraction(y) for x, y in zip(a.tolist(), b.tolist())), Fraction(0)))


def expected_output(task_id: str, dims: list[int], inputs: list[np.ndarray]) -> np.ndarray:
    x = [a.astype(np.float64) for a in inputs]
    if task_id == "fill":
        rows, cols = dims
        return np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    if task_id == "add":
        return x[0] + x[1]
    if task_id == "transpose":
        return np.ascontiguousarray(x[0].T)
    if task_id.startswith("matmul"):
        return np.array([[exact_sum_of_products(row, col) for col in x[1].T] for row in x[0]]).reshape(dims[0], dims[1])
    if task_id == "dot":
        return np.array([exact_sum_of_products(x[0], x[1])])
    raise SystemExit(f"generate.py does not know how to compute task '{task_id}': add it to expected_output()")


# --- writing ----------------------------------------------------------------

def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(array), version=(1, 0), allow_pickle=False)
    return buffer.getvalue()


def generate(registry: dict, out: Path) -> dict:
    cases = []
    index = 0
    for task in registry["tasks"]:
        for dtype in task["dtypes"]:
            for shape_text in task["shape_sets"]["data"]:
                seed = BASE_SEED + index
                index += 1
                dims = parse_shape(shape_text)
                shapes = input_shapes(task, dims)
                bound = int_bound(task["int_range"], dims[2] if task["shape_kind"] == "gemm" else 1)
                inputs = [rng_values(seed, i, int(np.prod(s)), dtype, task["distribution"], bound).reshape(s)
                          for i, s in enumerate(shapes)]
                expected = expected_output(task["id"], dims, inputs).astype(DTYPES[dtype])
                rel = Path("cases") / task["id"] / dtype / shape_text
                files = {}
                for name, array in [*zip(task["inputs"], inputs), ("expected", expected)]:
                    data = npy_bytes(array)
                    (out / rel).mkdir(parents=True, exist_ok=True)
                    (out / rel / f"{name}.npy").write_bytes(data)
                    files[f"{name}.npy"] = hashlib.sha256(data).hexdigest()
                cases.append({"task": task["id"], "dtype": dtype, "shape": shape_text, "seed": seed,
                              "dir": rel.as_posix(), "files": files})
    manifest = {
        "format": 1,
        "generator": "data/generate.py",
        "harness_version": registry["harness_version"],
        "description": "Small reference cases: inputs from the harness's counter-based generator, "
                       "expected outputs computed in float64 by numpy and rounded to the element type.",
        "cases": cases,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and (p.suffix == ".npy" or p.name == "manifest.json")}


def load_registry(args: argparse.Namespace) -> dict:
    if args.registry:
        return json.loads(Path(args.registry).read_text())
    try:
        text = subprocess.run([args.harness, "--list-tasks", "--json"], check=True, capture_output=True,
                              text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"generate.py: could not read the task registry from {args.harness}: {e}")
    return json.loads(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--harness", help="a built harness binary, asked for its registry")
    source.add_argument("--registry", help="a file holding the output of harness --list-tasks --json")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent), help="data directory (default: data/)")
    parser.add_argument("--check", action="store_true",
                        help="regenerate into a temporary directory and compare with --out; change nothing")
    args = parser.parse_args(argv)
    registry = load_registry(args)
    out = Path(args.out)

    if not args.check:
        if (out / "cases").exists():
            shutil.rmtree(out / "cases")
        manifest = generate(registry, out)
        print(f"wrote {len(manifest['cases'])} cases to {out}")
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        generate(registry, Path(tmp))
        fresh, stored = tree_digest(Path(tmp)), tree_digest(out)
    differ = sorted(name for name in fresh.keys() | stored.keys() if fresh.get(name) != stored.get(name))
    for name in differ:
        state = "missing" if name not in stored else "unexpected" if name not in fresh else "differs"
        print(f"{out / name}: {state}", file=sys.stderr)
    if differ:
        print(f"{len(differ)} file(s) in {out} do not match what generate.py makes; run `make data`",
              file=sys.stderr)
        return 1
    print(f"{len(fresh)} files in {out} match generate.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
