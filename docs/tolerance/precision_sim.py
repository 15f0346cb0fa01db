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
    python3 docs/tolerance/precision_sim.py --float64  # the same for float64 (53-bit inputs)

With --float64 the inputs carry 53 significant bits (as the harness makes
float64 inputs), u = 2^-53, the reference is exact to about 2^-106 (Dot2, as
the harness computes it, compensated.h), the honest kernel is one float64
accumulator, and the coarse ones are what students write by mistake: a float
accumulator, and float tiles (inputs rounded to float32, float accumulator).
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


def two_product(a, b):
    """a b = p + e exactly (Dekker's splitting; no FMA needed, no overflow at these magnitudes)."""
    p = a * b
    factor = 134217729.0  # 2^27 + 1

    def split(x):
        c = factor * x
        hi = c - (c - x)
        return hi, x - hi
    ah, al = split(a)
    bh, bl = split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def two_sum(a, b):
    s = a + b
    z = s - a
    return s, (a - (s - z)) + (b - z)


def draw53(rng, n, shift):
    m = rng.integers(0, 1 << 53, size=n, dtype=np.int64)
    return (2 * m + 1 - (1 << 53)).astype(np.float64) / 9007199254740992.0 + shift


def simulate64(rng, k, n, shift, variant):
    a = draw53(rng, n * k, shift[0]).reshape(n, k)
    b = draw53(rng, n * k, shift[1]).reshape(n, k)
    m = np.einsum("ij,ij->i", np.abs(a), np.abs(b))
    s, c = np.zeros(n), np.zeros(n)  # Dot2: the reference, to about 2^-106
    for p in range(k):
        prod, perr = two_product(a[:, p], b[:, p])
        s, serr = two_sum(s, prod)
        c += perr + serr
    exact = s + c
    if variant == "float tiles":
        a, b = a.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
    acc = np.zeros(n, dtype=np.float32 if variant in ("float accumulator", "float tiles") else np.float64)
    for p in range(k):
        acc = (acc.astype(np.float64) + a[:, p] * b[:, p]).astype(acc.dtype)
    e = np.abs(acc.astype(np.float64) - exact) / (2.0 ** -53 * m)
    return e.mean(), e.max() / np.sqrt(k)


def main64(ks) -> None:
    rng = np.random.default_rng(2026)
    coarse = ["float accumulator", "float tiles"]
    print(f"{'K':>6} {'float64 mean e (worst)':>24} {'max e/sqrtK':>12}   " +
          "   ".join(f"{c + ' mean e':>24}" for c in coarse))
    for k in ks:
        n = 1000 if k <= 1024 else 300
        worst = [simulate64(rng, k, n, s, "float64") for s in SHIFTS]
        mild = [min(simulate64(rng, k, n, s, v)[0] for s in SHIFTS) for v in coarse]
        print(f"{k:>6} {max(w[0] for w in worst):>24.2f} {max(w[1] for w in worst):>12.3f}   " +
              "   ".join(f"{x:>24.3g}" for x in mild), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--float64", action="store_true", help="float64 inputs and kernels (see above)")
    args = parser.parse_args()
    ks = [1, 43, 521, 1024] if args.quick else [1, 43, 521, 1024, 4096, 8192]
    if args.float64:
        main64(ks)
        return
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
