"""solution/tools/slab_mix.py: the per-slab instruction count it reads from SASS, on hand-written
listings (the tool's cuobjdump is not in every toolkit; CI has none)."""
from __future__ import annotations

import importlib.util

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("slab_mix", ROOT / "solution" / "tools" / "slab_mix.py")
slab_mix = importlib.util.module_from_spec(spec)
spec.loader.exec_module(slab_mix)


def listing(lines: list[str]) -> str:
    """Instructions at 16-byte steps, in cuobjdump's layout."""
    return "\n".join(f"        /*{16 * i:04x}*/                   {text} ;" for i, text in enumerate(lines))


def test_a_slab_written_out_counts_every_instruction_once():
    body = ["BAR.SYNC.DEFER_BLOCKING 0x0", "LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]", "LDS.128 R4, [R3]",
            *["FFMA R8, R4, R5, R8"] * 12, "ISETP.GE.AND P0, PT, R9, R10, PT"]
    code = ["MOV R1, R2", *body, "@!P0 BRA 0x10", "EXIT"]
    got = slab_mix.slab(listing(code), ffma_per_slab=12)
    assert got == {"ffma": 12, "issued": len(body) + 1, "lds": 1, "copies": 1, "bra": 1}


def test_a_rolled_math_loop_inside_the_slab_counts_once_per_trip():
    # slab: barrier, then a 4-FFMA math loop that must run 3 times for the slab's 12 FFMAs
    code = ["MOV R1, R2",
            "BAR.SYNC.DEFER_BLOCKING 0x0",                       # 0x10: slab starts
            "LDS.128 R4, [R3]",                                  # 0x20: math loop starts
            *["FFMA R8, R4, R5, R8"] * 4,                        # 0x30 .. 0x60
            "@P1 BRA 0x20",                                      # 0x70: math loop back edge
            "@!P0 BRA 0x10",                                     # 0x80: slab back edge
            "EXIT"]
    got = slab_mix.slab(listing(code), ffma_per_slab=12)
    assert got["ffma"] == 12
    assert got["issued"] == 1 + 3 * 6 + 1  # the barrier, three trips of LDS + 4 FFMA + branch, the slab's branch
    assert got["lds"] == 3 and got["bra"] == 4


def test_a_listing_without_a_barrier_loop_is_refused():
    with pytest.raises(ValueError, match="no k-slab loop"):
        slab_mix.slab(listing(["FFMA R8, R4, R5, R8", "EXIT"]), ffma_per_slab=4)
