"""grader/run/counters.py: the counted launches a submission's harness wrote (in the sandbox, so possibly forged)
become make profile's numbers and sentences, or a one-line reason; nothing a submission writes there can grow the
stored feedback without bound or raise."""
from __future__ import annotations

import json

from grader.core.status import ProfileStatus
from grader.run import counters


def launch(at: str = "transpose.cu:13", kernel: str = "transpose_naive", sectors: int = 32 * 1024) -> dict:
    return {"kernel": kernel, "launched_at": "transpose.cu:20", "grid": [32, 128, 1], "block": [32, 8, 1],
            "dynamic_shared_bytes": 0, "static_shared_bytes": 0, "launch_bounds": 0,
            "sites": [{"at": at, "space": "global", "op": "store", "instructions": 1024, "lanes": 32 * 1024,
                       "lane_slots": 32 * 1024, "divergent": 0, "sectors": sectors, "ideal_sectors": 4 * 1024}]}


def test_counted_launches_give_the_numbers_and_the_sentence_naming_the_line():
    done = counters.outcome("transpose", "float32", "1024x1024", json.dumps(launch()) + "\n")
    assert done.status == ProfileStatus.COUNTED and done.numbers["global_store_sectors_per_needed"] == 8.0
    (sentence,) = done.findings
    assert "your stores touch 32.0 sectors per warp request where 4.0 would do (transpose.cu:13)" in sentence


def test_code_addresses_get_their_lines_from_the_symbolizer():
    asked = []

    def symbolize(addresses):
        asked.extend(addresses)
        return {"0x1a2a": "transpose.cu:13"}
    done = counters.outcome("transpose", "float32", "1024x1024", json.dumps(launch(at="pc:0x1a2b")), symbolize)
    assert asked == ["0x1a2a"] and "(transpose.cu:13)" in done.findings[0]  # the call, one byte before its return


def test_what_is_not_counts_is_one_line_and_never_a_traceback():
    for text, why in (("{not json", "could not be read"), ('{"kernel": 1}', "could not be read"),
                      ("", "no kernel launch was counted"), ("x" * (counters.MAX_BYTES + 1), "over 4 MiB")):
        done = counters.outcome("transpose", "float32", "1024x1024", text)
        assert done.status == ProfileStatus.FAILED and why in done.message and not done.findings, (text[:20], done)


def test_forged_names_cannot_make_the_feedback_long():
    lines = "\n".join(json.dumps(launch(at="A" * 100_000 + f":{i}", kernel="K" * 50_000)) for i in range(40))
    done = counters.outcome("transpose", "float32", "1024x1024", lines)
    assert len(done.findings) <= counters.MAX_FINDINGS
    assert all(len(f) <= counters.MAX_SENTENCE for f in done.findings)


def forged(**change) -> str:
    one = launch()
    for key, value in change.items():
        if key.startswith("site_"):
            one["sites"][0][key[5:]] = value
        else:
            one[key] = value
    return json.dumps(one)


def test_forged_counts_that_would_break_the_arithmetic_are_one_line():
    """What a submission could write into its counts file: each is refused in one line (review of issue 31)."""
    for text in (forged(static_shared_bytes=-1024), forged(site_instructions=0), forged(site_instructions=-100),
                 forged(site_sectors=10 ** 400), "[" * 100_000 + "]" * 100_000, forged(block=[10 ** 10, "ab", 1]),
                 forged(block=[2048, 1, 1]), forged(site_space="texture"), forged(site_at=["a list"]),
                 forged(kernel="K" * 10_000)):
        done = counters.outcome("transpose", "float32", "1024x1024", text)
        assert done.status == ProfileStatus.FAILED and done.message.startswith("the counts could not be read"), \
            (text[:60], done.message)


def test_a_forged_code_address_is_never_handed_to_the_symbolizer():
    asked = []
    done = counters.outcome("transpose", "float32", "1024x1024", forged(site_at="pc:" + "f" * 200),
                            lambda addresses: asked.extend(addresses) or {})
    assert asked == [] and done.status == ProfileStatus.COUNTED and "(an unknown line)" in done.findings[0]


def test_a_kernel_too_big_to_count_says_so():
    done = counters.outcome("transpose", "float32", "1024x1024", forged(too_many_accesses=4194304, sites=[]))
    assert done.status == ProfileStatus.FAILED
    assert "made more than 4,194,304 memory accesses in one block: too many to count" in done.message
