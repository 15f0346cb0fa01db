#!/usr/bin/env python3
"""The numbers behind the matmul tolerance (starter/harness/tolerance.h).

Simulates dot products of length K with inputs as the harness's generator
makes them (v uniform in (-1, 1) on a 2^-24 grid, plus a shift t; the scale
2^e does not change relative errors), computed

  * the way an honest float32 kernel does: one accumulator over all of K, with
    or without FMA (the least accurate honest order: blocked or pairwise sums
    do better), and
  * the way lower-precision kernels do: products or inputs rounded to half
    (11 significant bits), inputs rounded to TF32 (11) or bfloat16 (8), float
    accumulation,

and prints, per K, the mean of e = |c - r| / (u m) (u = 2^-24, m = sum |a b|)
and the largest e / sqrt(K) over the sums: the worst float32 case over the
shifts tried (0 and the extreme +-1/4), and the mildest lower-precision one.

    python3 docs/tolerance/precision_sim.py            # about a minute
    python3 docs/tolerance/precision_sim.py --quick    # K up to 1024
"""
from __future__ import annotations

import argparse

import numpy as np

U = 2.0 ** -24
SHIFTS = [(0.0, 0.0), (0.25, 0.25), (0.25, -0.25)]


def draw(rng, n, shift):
    m = rng.integers(0, 1 << 24, size=n)
    return (2 * m + 1 - (1 << 24)) / 16777216.0 + shift


def round_bits(x, bits):
    """x rounded to nearest with `bits` significant bits (range ignored)."""
    e = np.floor(np.log2(np.abs(x) + 1e-300))
    q = 2.0 ** (e - bits + 1)
    return np.round(x / q) * q


def simulate(rng, k, n, shift, variant):
    a = draw(rng, n * k, shift[0]).reshape(n, k).astype(np.float32).astype(np.float64)
    b = draw(rng, n * k, shift[1]).reshape(n, k).astype(np.float32).astype(np.float64)
    exact = np.einsum("ij,ij->i", a, b)
    m = np.einsum("ij,ij->i", np.abs(a), np.abs(b))
    bits = {"half inputs": 11, "TF32 inputs": 11, "bfloat16 inputs": 8}.get(variant)
    if bits:
        a, b = round_bits(a, bits), round_bits(b, bits)
    acc = np.zeros(n, dtype=np.float32)
    for p in range(k):
        prod = a[:, p] * b[:, p]
        if variant == "float32, no FMA":
            acc = acc + prod.astype(np.float32)
        elif variant == "half products":
            acc = (acc.astype(np.float64) + round_bits(prod.astype(np.float32).astype(np.float64), 11)).astype(np.float32)
        else:  # one FMA: the product exact, one rounding
            acc = (acc.astype(np.float64) + prod).astype(np.float32)
    e = np.abs(acc.astype(np.float64) - exact) / (U * m)
    return e.mean(), e.max() / np.sqrt(k)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    ks = [1, 43, 521, 1024] if args.quick else [1, 43, 521, 1024, 4096, 8192]
    honest = ["float32, FMA", "float32, no FMA"]
    coarse = ["half products", "half inputs", "TF32 inputs", "bfloat16 inputs"]
    rng = np.random.default_rng(2026)
    print(f"{'K':>6} {'float32 mean e (worst)':>24} {'max e/sqrtK':>12}   " +
          "   ".join(f"{c + ' mean e':>22}" for c in coarse))
    for k in ks:
        n = 2000 if k <= 1024 else 1000
        worst_mean = worst_max = 0.0
        for v in honest:
            for s in SHIFTS:
                mean, mx = simulate(rng, k, n, s, v)
                worst_mean, worst_max = max(worst_mean, mean), max(worst_max, mx)
        mild = [min(simulate(rng, k, n, s, v)[0] for s in SHIFTS) for v in coarse]
        print(f"{k:>6} {worst_mean:>24.2f} {worst_max:>12.3f}   " + "   ".join(f"{x:>22.0f}" for x in mild),
              flush=True)


if __name__ == "__main__":
    main()
