"""Feedback a student acts on in a minute: the sample class (demo_class.py) graded with the real rubric on the
simulated GPU, whose fake harness answers with the real harness's messages and hints for each planted bug
(planted.py). Lengths, which hint each bug gets and in which order, the reproduce commands, and the plot."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from grader.reports import feedback
from grader.reports.report import performance_markdown, run_of, task_feedback, task_markdown
from grader.reports.folder import write_reports
from grader.tests import planted
from grader.tests.conftest import REPO, opened
from grader.tests.demo_class import SEED, demo_files, grade_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory, rubric, registry):
    results = grade_demo(tmp_path_factory.mktemp("demo"), rubric, registry)
    write_reports(results, rubric)
    return results


def page(demo, student: str, kind: str = "md") -> str:
    return (demo / "feedback" / f"{student}.{kind}").read_text()


def tasks_of(demo, rubric, student: str) -> dict[str, dict]:
    with opened(demo) as store:
        sub = store.submissions(student).iloc[-1]
        tasks = task_feedback(store, rubric, int(sub["id"]), run_of(store, int(sub["run_id"]))["limits"])
    return {t["task"]: t for t in tasks}


# --- lengths -------------------------------------------------------------------------------------------------

def test_a_correct_submissions_page_fits_in_about_thirty_lines(demo):
    text = page(demo, "s08-fast")
    assert len(text.splitlines()) <= 34  # 2 of them say the fake backend ran without a sandbox
    assert "passed" not in text.split("## Performance")[1]  # no line per passed case
    assert len(re.findall(r"passed \d+/\d+", text)) == 7  # one per task


def test_the_stubs_page_says_not_implemented_once_per_task(demo, rubric):
    text = page(demo, "s01-stubs")
    assert text.count("not implemented") == len(rubric.tasks)
    assert "not implemented yet: not implemented yet" not in text
    assert len(text.splitlines()) <= 22


def test_a_missing_file_is_one_line_not_one_per_case(demo):
    text = page(demo, "s02-naive-only")
    assert text.count("file missing") == 6 and "was not in the submission" not in text
    assert "matmul_fast.cu is missing" not in text  # intake's note would repeat the table


def test_a_planted_bugs_page_is_short_and_each_hint_appears_once(demo):
    text = page(demo, "s04-race")
    assert len(text.splitlines()) <= 45
    assert text.count(planted.RACE) == 1  # 24 failed cases, one cause


SCREEN = 50  # lines of a screen: a laptop's browser window or a terminal, at 100 characters a line
# Each sample's page in screens (wrapped at 100 characters), as graded on the fake backend: the stubs, a missing
# file and a correct submission fit one; a planted bug, with its sanitizer report and commands, two at most.
SCREENS = {"s01-stubs": 1, "s02-naive-only": 1, "s03-tiled-off-by-one": 2, "s04-race": 2, "s05-hang": 1,
           "s06-crash": 2, "s07-compile-error": 1, "s08-fast": 1}


def screen_lines(text: str) -> int:
    return sum(1 + len(line) // 100 for line in text.splitlines())


def test_every_samples_page_is_in_the_table_of_screens(registry):
    assert set(SCREENS) == set(demo_files(registry))


@pytest.mark.parametrize("student", sorted(SCREENS))
def test_each_samples_page_fits_a_screen_or_two(demo, student):
    for kind in ("md", "html"):
        text = page(demo, student, kind)
        if kind == "html":  # the page as read: its text, not its markup or its embedded plot
            text = re.sub(r"<style>.*?</style>|<[^>]+>", "", text, flags=re.S)
            text = "\n".join(line for line in text.splitlines() if line.strip())
        assert screen_lines(text) <= SCREENS[student] * SCREEN, (student, kind, screen_lines(text))


# --- causes, grouped ------------------------------------------------------------------------------------------

def test_cases_with_one_cause_are_one_group_that_lists_what_it_covers(demo, rubric):
    tiled = tasks_of(demo, rubric, "s04-race")["matmul_tiled"]
    assert tiled["verdict"] == "24 of 27 cases wrong"
    [group] = tiled["groups"]
    assert group.count == 24 and group.hints == [planted.RACE]
    assert group.covers == "float32, float64 and int32 at 1x257x13, 257x1x13, 37x41x43, 96x160x96, … (24 cases)"


def test_covers_names_types_with_their_own_shapes_and_every_shape():
    rows = pd.DataFrame([("float32", s, "correctness") for s in ("1x1", "2x2", "3x3")]
                        + [("int32", "2x2", "correctness")], columns=["dtype", "shape", "kind"])
    assert feedback.covers(rows, ("1x1", "2x2", "3x3")) == "float32 at every shape; int32 at 2x2 (4 cases)"


def test_numbers_aside_makes_counts_and_values_one_message():
    a = "all 1517 elements are wrong; the first is at (row 0, col 0): expected 3.25, got 3.3125"
    b = "1 of 1 element is wrong; the first is at (row 0, col 0): expected -1, got 2e-05"
    assert feedback.numbers_aside(a) == feedback.numbers_aside(b)


# --- which hint, in which order -------------------------------------------------------------------------------

def test_the_k_guard_bug_leads_with_memchecks_line_then_the_shape_pattern(demo, rubric):
    tiled = tasks_of(demo, rubric, "s03-tiled-off-by-one")["matmul_tiled"]
    kinds = [e.kind for e in tiled["evidence"]]
    assert kinds == ["sanitizer", "pattern"]
    assert "found 96 errors at matmul_tiled.cu:17" in tiled["evidence"][0].text
    assert "read global memory outside every array" in tiled["evidence"][0].text
    text = page(demo, "s03-tiled-off-by-one")
    assert text.index("matmul_tiled.cu:17") < text.index("**wrong**")


def test_memcheck_drops_the_grid_and_race_hints_it_contradicts(demo, rubric):
    tiled = tasks_of(demo, rubric, "s03-tiled-off-by-one")["matmul_tiled"]
    shown = [h for g in tiled["groups"] for h in g.hints]
    dropped = [h for g in tiled["groups"] for h in g.dropped]
    assert not any("Round the number of blocks up" in h for h in shown)
    assert planted.RACE not in shown
    assert any("Round the number of blocks up" in h for h in dropped) and planted.RACE in dropped
    text = page(demo, "s03-tiled-off-by-one") + page(demo, "s03-tiled-off-by-one", "html")
    assert "Round the number of blocks up" not in text and "usually mean a race" not in text


def test_the_grid_hint_stands_where_nothing_contradicts_it():
    """planted/element_never_written: memcheck clean, so "never written ... round up" is the right hint."""
    hint = planted.NEVER_WRITTEN.format(n=37)
    assert not feedback.contradicted(hint, {"memcheck": "clean", "racecheck": "clean"})
    assert feedback.contradicted(hint, {"memcheck": "errors", "racecheck": "clean"})


def test_the_index_formula_hint_falls_where_the_tile_pattern_holds_for_its_type():
    """On the H100, the k-guard sample's int32 cases got "Every element is wrong: check the index formula" beside the
    pattern "only shapes that are not multiples of 16 failed": where multiples pass, the formula is right."""
    assert feedback.contradicted(planted.EVERY_ELEMENT, {"memcheck": "clean"}, tile_pattern_holds=True)
    assert not feedback.contradicted(planted.EVERY_ELEMENT, {"memcheck": "errors", "racecheck": "clean"})
    wrong = "all 257 elements are wrong; the first is at (row 0, col 0): expected 3, got 4"
    rows = [("int32", s, "correctness", "ok" if s == "32x32x32" else "wrong", planted.EVERY_ELEMENT if s != "32x32x32"
             else "", wrong, 1) for s in ("1x257x13", "37x41x43", "32x32x32")]
    rows += [("float32", s, "correctness", "wrong", planted.EVERY_ELEMENT, wrong, 1) for s in ("1x257x13", "32x32x32")]
    cases = pd.DataFrame(rows, columns=["dtype", "shape", "kind", "status", "hint", "message", "seed"])
    cases["output"] = ""
    tools = pd.DataFrame(columns=["tool", "status", "errors"])
    done = feedback.condense("matmul_tiled", ("1x257x13", "37x41x43", "32x32x32"), cases, tools)
    by_type = {g.first.split()[0]: g for g in done["groups"]}
    assert by_type["int32"].hints == [] and by_type["int32"].dropped == [planted.EVERY_ELEMENT]
    assert by_type["float32"].hints == [planted.EVERY_ELEMENT]  # float32 fails at 32x32x32 too: no pattern


def test_the_race_hint_stands_with_racechecks_finding_or_without_memchecks():
    race = planted.RACE
    assert not feedback.contradicted(race, {"memcheck": "clean", "racecheck": "clean"})  # a race in global memory
    assert not feedback.contradicted(race, {"memcheck": "errors", "racecheck": "errors"})
    assert not feedback.contradicted(race, {"memcheck": "errors", "racecheck": "skipped"})  # no verdict: no proof
    assert feedback.contradicted(race, {"memcheck": "errors", "racecheck": "clean"})


def test_the_missing_barrier_leads_with_racechecks_line_and_keeps_the_race_hint(demo, rubric):
    tiled = tasks_of(demo, rubric, "s04-race")["matmul_tiled"]
    assert tiled["evidence"][0].kind == "sanitizer" and "matmul_tiled.cu:16" in tiled["evidence"][0].text
    assert tiled["groups"][0].hints == [planted.RACE]


def test_a_race_sentence_before_the_cases_own_hint_is_split_off():
    assert feedback.split_hint(f"{planted.RACE} {planted.EVERY_ELEMENT}") == [planted.RACE, planted.EVERY_ELEMENT]
    assert feedback.split_hint("") == []


def test_the_tile_pattern_names_the_width_the_shapes_show():
    rows = pd.DataFrame([("float32", "96x160x96", "ok"), ("float32", "37x41x43", "wrong"),
                         ("float32", "1024x1024x1024", "ok")], columns=["dtype", "shape", "status"])
    text, dtypes = feedback.tile_pattern(rows.assign(kind="correctness"))
    assert text.startswith("Only shapes with a size that is not a multiple of 16 failed") and dtypes == ["float32"]
    failing_multiple = rows.assign(status=["wrong", "wrong", "ok"], kind="correctness")
    # 96x160x96 (a multiple of 16 and 32) failed, 1024^3 passed: the evidence says 64
    assert feedback.tile_pattern(failing_multiple)[0].startswith("Only shapes with a size that is not a multiple of 64")
    assert feedback.tile_pattern(rows.assign(status="wrong", kind="correctness"))[0] == ""


def test_a_gpu_fault_leads_with_the_line_memcheck_names(demo, rubric):
    add = tasks_of(demo, rubric, "s06-crash")["add"]
    assert add["verdict"] == "18 of 18 cases ended in an error"
    assert "at add.cu:9" in add["evidence"][0].text
    [group] = add["groups"]
    assert "cudaErrorIllegalAddress" in group.message and group.count == 18


def test_a_file_that_does_not_compile_shows_the_compilers_line_once(demo, rubric):
    transpose = tasks_of(demo, rubric, "s07-compile-error")["transpose"]
    assert transpose["verdict"] == "does not build" and transpose["groups"] == []
    [line] = transpose["evidence"]
    assert line.kind == "build" and line.text.startswith("transpose.cu does not compile: transpose.cu(")
    assert page(demo, "s07-compile-error").count("transpose.cu does not compile") == 1


def test_a_hang_says_timed_out_once_and_the_skipped_cases_after_it(demo, rubric):
    fill = tasks_of(demo, rubric, "s05-hang")["fill"]
    assert fill["verdict"] == "9 of 9 cases failed: 1 timed out, 8 not run"
    assert [g.status for g in fill["groups"]] == ["timeout", "skipped"]
    assert fill["groups"][1].reproduce is None  # a consequence: nothing of its own to repeat


# --- reproduce --------------------------------------------------------------------------------------------------

def test_every_failure_of_the_students_code_comes_with_commands_that_reproduce_it_with_or_without_a_gpu(demo, rubric):
    """`make test` picks the backend by itself; the one case runs on the harness a student can build: with a GPU
    ./build/starter/harness, without one the CPU backend's, which `make test` does not link (CPU=1 builds it)."""
    tiled = tasks_of(demo, rubric, "s03-tiled-off-by-one")["matmul_tiled"]
    for group in tiled["groups"]:
        dtype, shape = group.first.split()
        case = f"--task matmul_tiled --dtype {dtype} --shape {shape} --seed {SEED} --check-only"
        assert group.reproduce.suite == f"make test TASK=matmul_tiled SEED={SEED}"
        assert group.reproduce.gpu == f"make harness && ./build/starter/harness {case}"
        assert group.reproduce.cpu == f"make harness CPU=1 && ./build/on-cpu/starter/harness {case}"
    md = page(demo, "s03-tiled-off-by-one")
    assert (f"; this case alone, with an NVIDIA GPU: `{group.reproduce.gpu}`; without one: `{group.reproduce.cpu}`"
            in md)
    # memcheck as the grader ran it: padded allocations, every array alone in one of exactly its size
    memcheck = tiled["evidence"][0].reproduce
    assert memcheck.startswith("compute-sanitizer --tool memcheck --padding 1048576 ./build/starter/harness "
                               "--task matmul_tiled --dtype float32 --shape 37x41x43")
    assert memcheck.endswith(" --check-only --fixed-placement")


def test_the_reproduce_commands_use_flags_the_harness_and_makefile_have():
    main = (REPO / "starter" / "harness" / "main.cpp").read_text()
    for flag in ("--task", "--dtype", "--shape", "--seed", "--check-only", "--fixed-placement"):
        assert f'"{flag}"' in main, flag
    makefile = (REPO / "starter" / "Makefile").read_text()
    assert "$(if $(SEED),--seed $(SEED))" in makefile and "$(if $(TASK),--task $(TASK))" in makefile
    # kernels/ builds into $(BUILD)/starter: the harness of a student's starter/ is ./build/starter/harness, and
    # with CPU=1 ./build/on-cpu/starter/harness; `make harness` builds it (make test too, for its checks).
    assert "HARNESS_BIN := $(KOBJ)/harness" in makefile and "KOBJ     := $(BUILD)/$(KTAG)" in makefile
    assert "KTAG     ?= $(if $(filter kernels,$(KERNELS)),starter," in makefile and "BUILD        ?= build" in makefile
    assert "BUILD        ?= build/on-cpu" in makefile and "\nharness: $(HARNESS_BIN)\n" in makefile
    assert "test: $(SUITE_BIN) $(TEST_TOOLS)" in makefile
    assert (feedback.HARNESS, feedback.CPU_HARNESS) == ("./build/starter/harness", "./build/on-cpu/starter/harness")


# --- the same text everywhere ------------------------------------------------------------------------------------

def test_markdown_html_and_gradescope_carry_the_same_condensed_text(demo, rubric):
    import html as html_lib
    for student in ("s03-tiled-off-by-one", "s05-hang", "s06-crash", "s07-compile-error"):
        md, html = page(demo, student), html_lib.unescape(page(demo, student, "html"))
        for task in tasks_of(demo, rubric, student).values():
            text = task_markdown(task)
            assert text.splitlines()[0] == f"**{task['verdict']}**" + (f" · {task['note']}" if task["note"] else "")
            for piece in [task["verdict"]] + [e.text for e in task["evidence"]] + \
                         [x for g in task["groups"] for x in [g.covers, g.message, *g.hints] +
                          ([g.reproduce.suite, g.reproduce.gpu, g.reproduce.cpu] if g.reproduce else []) if x]:
                assert piece in md and piece in html and piece in text, (student, piece)


def test_no_points_note_says_minus_zero(demo, rubric):
    for student in ("s01-stubs", "s03-tiled-off-by-one", "s04-race", "s06-crash"):
        assert "-0 points" not in page(demo, student) and "−0 points" not in page(demo, student)
    note = tasks_of(demo, rubric, "s06-crash")["add"]["note"]
    assert "compute-sanitizer" not in note  # its correctness was 0 already: the deduction took nothing


def test_a_real_deduction_is_said_with_its_size():
    four_passed = pd.DataFrame({"status": ["ok"] * 4})
    parts, taken = feedback.points_note({"correctness_max": 8.0, "correctness": 6.0, "performance_max": 0.0,
                                         "verdict": "passed", "timed": []}, four_passed)
    assert parts == ["compute-sanitizer: −2 points"] and taken


def test_a_tools_finding_where_the_case_already_failed_is_shown_and_takes_nothing_more(demo, rubric):
    """s03's off-by-one fails the partial-tile cases, and memcheck finds its reads at the small case, one of
    them: the cases already cost it, so the page shows the finding and no deduction."""
    task = tasks_of(demo, rubric, "s03-tiled-off-by-one")["matmul_tiled"]
    assert "compute-sanitizer:" not in task["note"], task["note"]
    assert "compute-sanitizer memcheck (out-of-bounds and misaligned memory accesses) found 96 errors" in \
        page(demo, "s03-tiled-off-by-one")


def test_no_output_speaks_of_the_graders_own_machinery():
    """A fault ends only its own case in the grader (a fresh process takes the next): nothing may say that it
    left the GPU unusable for the rest of a run."""
    product = [p for p in (REPO / "grader").rglob("*.py") if "tests" not in p.relative_to(REPO / "grader").parts]
    for path in [*product, *(REPO / "grader" / "reports" / "templates").iterdir()]:
        text = path.read_text()
        assert "unusable" not in text and "rest of this run" not in text, path


def test_the_hint_sentences_matched_are_the_harness_own():
    """feedback.py recognizes hints by their words: they must still be diagnose.cpp's."""
    source = (REPO / "starter" / "harness" / "diagnose.cpp").read_text()
    literal = re.sub(r'"\s*\n\s*"', "", source)  # adjacent string literals, joined
    assert feedback.RACE_SENTENCE in literal
    assert "Does your grid cover every element? Round the number of blocks up" in literal
    assert "never written: does your grid cover every element?" in literal
    assert planted.EVERY_ELEMENT in literal and feedback.INDEX_FORMULA.search(planted.EVERY_ELEMENT)
    pattern = feedback.TILE_PATTERN.split("{t}")
    assert pattern[0] in literal and "failed (every shape whose sizes are all multiples of " in literal
    assert "passed): check the bounds in your last, partial tile (load 0 outside the matrix, store only where row < " \
           "rows && col < cols)." in literal
    assert "return 16 << i;" in (REPO / "starter" / "harness" / "device_ops.h").read_text()  # EDGE_TILES


# --- performance ------------------------------------------------------------------------------------------------

def test_the_performance_table_shows_speedup_thresholds_credit_and_points(demo, rubric):
    fast = tasks_of(demo, rubric, "s08-fast")["matmul_fast"]
    text = performance_markdown(fast)
    assert "| no / full credit at |" in text and "| 0.1 / 0.7 |" in text and "10.0 / 10.0" in text
    assert len(fast["timed"]) == 2 and all(v["points_max"] == 10.0 for v in fast["timed"])


def test_the_plot_is_embedded_and_written_beside_the_page(demo):
    html = page(demo, "s08-fast", "html")
    assert "data:image/png;base64," in html
    assert (demo / "feedback" / "s08-fast.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (demo / "feedback" / "s01-stubs.png").exists()  # nothing timed: no plot


def test_the_plot_draws_each_timed_case_on_a_linear_axis_with_both_thresholds(monkeypatch):
    import matplotlib.axes
    from grader.reports import plots
    drawn = {}
    real = matplotlib.axes.Axes.set_xlim

    def spy(self, *args, **kwargs):
        drawn["xlim"] = args
        drawn["scale"] = self.get_xscale()
        drawn["vlines"] = [tuple(line.get_xdata()) for line in self.lines]
        return real(self, *args, **kwargs)
    monkeypatch.setattr(matplotlib.axes.Axes, "set_xlim", spy)
    view = {"task": "dot", "shape": "268435456", "speedup": 0.5, "speedup_low": 0.45, "speedup_high": 0.55,
            "s_zero": 0.25, "s_full": 0.8, "points": 3.1, "points_max": 6.0}
    png = plots.speedup_plot([view, dict(view, task="add", speedup=None)])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert drawn["scale"] == "linear" and drawn["xlim"][0] == 0
    assert (0.25, 0.25) in drawn["vlines"] and (0.8, 0.8) in drawn["vlines"]
    assert plots.speedup_plot([dict(view, speedup=None)]) is None


def test_old_feedback_pages_are_measured_against(demo):
    """The sample class's pages before this feedback (one line per case): 161 lines for the stubs, 186 for the
    correct submission, 206 for s03 (this fake class, measured with the feedback of e48fd10). Now:"""
    lengths = {s: len(page(demo, s).splitlines()) for s in ("s01-stubs", "s08-fast", "s03-tiled-off-by-one")}
    assert lengths["s01-stubs"] < 161 / 5 and lengths["s08-fast"] < 186 / 4 and lengths["s03-tiled-off-by-one"] < 206 / 3


def test_the_performance_counters_findings_come_last_and_change_no_verdict():
    """A CPU-graded task's make profile findings (profile_runs) are shown after the other evidence, each with the
    command that repeats it; the verdict stays the cases' own. A run that counted nothing adds no sentence."""
    rows = [("float32", s, "correctness", "ok", "", "", 1) for s in ("37x211", "1x1")]
    cases = pd.DataFrame(rows, columns=["dtype", "shape", "kind", "status", "hint", "message", "seed"])
    cases["output"] = ""
    tools = pd.DataFrame(columns=["tool", "status", "errors"])
    sentence = "your stores touch 32.0 sectors per warp request where 4.0 would do (transpose.cu:13): write through"
    counted = pd.DataFrame([{"task": "transpose", "dtype": "float32", "shape": "1024x1024", "status": "counted",
                             "findings": json.dumps([sentence]), "numbers": "{}", "message": "", "seconds": 0.5},
                            {"task": "transpose", "dtype": "float32", "shape": "1024x1024", "status": "failed",
                             "findings": json.dumps(["never shown"]), "numbers": "{}", "message": "x", "seconds": 0}])
    plain = feedback.condense("transpose", ("37x211", "1x1"), cases, tools)
    done = feedback.condense("transpose", ("37x211", "1x1"), cases, tools, counted)
    assert done["verdict"] == plain["verdict"] and done["groups"] == plain["groups"]
    (e,) = done["evidence"]
    assert e.kind == "performance" and e.reproduce == "make profile TASK=transpose"
    assert e.text == ("Performance (not scored; counted on the CPU for float32 1024x1024 as a GPU would run it): "
                      + sentence)
    assert done["details"] and not plain["details"]
