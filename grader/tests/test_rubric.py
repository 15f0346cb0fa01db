"""The rubric: the default one is valid, a broken one is refused with a clear message, the curve's edges."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from grader.core.rubric import DEFAULT_RUBRIC, RubricError, load_rubric


def broken(tmp_path: Path, old: str, new: str) -> Path:
    text = DEFAULT_RUBRIC.read_text()
    assert old in text, old
    path = tmp_path / "rubric.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_the_default_rubric_is_valid_and_worth_100_points(rubric, registry):
    assert rubric.max_points == 100
    assert [t.id for t in rubric.tasks] == registry.ids


@pytest.mark.parametrize("old, new, complaint", [
    ("[tasks.dot]", "[tasks.conv2d]", "[tasks.conv2d]: unknown task 'conv2d'"),
    ("[tasks.dot]\ncorrectness_points = 6", "[tasks.dot]\ncorrectness_points = -6",
     "'correctness_points' must be non-negative, got -6"),
    ("s_zero = 0.25\ns_full = 0.8\n\n[tasks.add]", "s_zero = 0.9\ns_full = 0.8\n\n[tasks.add]",
     "[tasks.fill]: thresholds out of order: s_zero (0.9) must be below s_full (0.8)"),
    ("[tasks.fill]\n", '[tasks.fill]\ndtypes = ["float16"]\n', "element type 'float16' is not one of the task's (int32)"),
    ("[tasks.dot]\n", '[tasks.dot]\ntimed = ["16x16"]\n', "'16x16' is not a vector shape"),
    ("[tasks.dot]\n", '[tasks.dot]\nshapes = "biggest"\n', "'shapes' names the shape set 'biggest', which the registry "
                                                              "does not have (its sets: graded, test, timed"),
    ("min_pairs = 10", "min_pairs = 500", "'max_pairs' (200) is smaller than 'min_pairs' (500)"),
    ("min_pairs = 10", "min_pairs = 1", "'min_pairs' must be at least 3"),
    ("build = 300", "build = 0", "[limits]: 'build' must be positive"),
    ("case = 20", 'case = "a minute"', "'case' must be a number"),
    ('leaderboard_task = "matmul_fast"', 'leaderboard_task = "gemm"', "'leaderboard_task' 'gemm' is not a graded task"),
    ("s_zero = 0.1\n", "s_zero = 0.1\nbonus = 5\n", "unknown key 'bonus'"),
    ("[limits]", "[limitz]", "missing the [limits] table"),
    ("budget = 7.0", "budget = 9.0", "8 timed cases of 9 s each ('budget') would take 72 s, more than "
                                     "'submission_budget' (60 s)"),
    ("[tasks.matmul_fast]\n", '[tasks.matmul_fast]\ntimed = "sweep"\n', "12 timed cases of 7 s each"),
    ("review_speedup = 1.5", "review_speedup = 0", "'review_speedup' must be positive"),
    ("processes = 256", "processes = 4", "'processes' must be at least 16"),
    ("processes = 256", "processes = 25.5", "'processes' must be an integer"),
    ("output_mib = 1", "output_mib = 1\nmemory_mib = 5", "[limits]: unknown key 'memory_mib'"),
    ('tools = ["memcheck", "racecheck"]', 'tools = ["memcheck", "initcheck"]', "unknown tool 'initcheck'"),
    ("penalty = 0.25", "penalty = 1.5", "'penalty' is a fraction of a task's correctness points, at most 1"),
    ("penalty = 0.25\n", 'penalty = 0.25\n[sanitizer.shapes]\ndot = "4x4"\n', "dot: '4x4' is not a vector shape"),
    ("penalty = 0.25\n", 'penalty = 0.25\n[sanitizer.shapes]\nconv = "3"\n', "'conv' is not a graded task"),
])
def test_a_broken_rubric_is_refused_with_the_file_and_entry_named(tmp_path, registry, old, new, complaint):
    path = broken(tmp_path, old, new)
    with pytest.raises(RubricError) as e:
        load_rubric(path, registry)
    assert str(e.value).startswith(str(path))
    assert complaint in str(e.value)


def test_types_and_shapes_come_from_the_registry_unless_the_rubric_names_a_set(tmp_path, rubric, registry):
    for policy in rubric.tasks:
        spec = registry.task(policy.id)
        assert policy.dtypes == spec.dtypes
        assert policy.shapes == spec.shapes("graded")
        assert policy.timed == spec.shapes("timed")
        assert rubric.sanitizer.shape(policy.id) == spec.shapes("sanitize")[0]
    other = load_rubric(broken(tmp_path, "[tasks.add]\n", '[tasks.add]\nshapes = "test"\ndtypes = ["int32"]\n'), registry)
    assert other.task("add").shapes == registry.task("add").shapes("test")
    assert other.task("add").dtypes == ("int32",)


def test_a_file_that_is_not_toml_is_refused(tmp_path, registry):
    path = tmp_path / "rubric.toml"
    path.write_text("[tasks\nfill = ")
    with pytest.raises(RubricError, match="not valid TOML"):
        load_rubric(path, registry)


def test_a_missing_rubric_is_named(tmp_path, registry):
    with pytest.raises(RubricError, match="no such rubric file"):
        load_rubric(tmp_path / "nope.toml", registry)


def test_the_rubric_hash_changes_with_its_content(tmp_path, registry, rubric):
    other = load_rubric(broken(tmp_path, "case = 20", "case = 21"), registry)
    assert other.sha256 != rubric.sha256


def rewritten(tmp_path: Path, name: str, *edits: tuple[str, str], until: str = "") -> Path:
    """The default rubric with each (old, new) replaced once, and `[hidden] until` appended when given."""
    text = DEFAULT_RUBRIC.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / name
    path.write_text(text + (f'[hidden]\nuntil = "{until}"\n' if until else ""))
    return path


def test_the_service_s_limits_and_who_sees_hidden_cases_when_leave_the_stored_rubric_digest_as_it_is(tmp_path,
                                                                                                   registry):
    """What decides only who sees what, and the service's limits, may change during the term: the stored grades
    stay the rubric's (no rescore, no grading the class again). What decides a score may not."""
    hidden = ('[tasks.matmul_fast]\n', '[tasks.matmul_fast]\nhidden = ["4096x4096x4096"]\n')
    before = load_rubric(rewritten(tmp_path, "a.toml", hidden, until="2026-12-11T23:59:00+00:00"), registry)
    after = load_rubric(rewritten(tmp_path, "b.toml", ('[tasks.matmul_fast]\n',
                                                       '[tasks.matmul_fast]\nhidden = ["4095x1031x515"]  # changed\n'),
                                  ("uploads_per_hour = 6", "uploads_per_hour = 12"), ('url = ""', 'url = "https://x"'),
                                  until="2026-12-18T23:59:00+00:00"), registry)
    assert after.service.uploads_per_hour == 12 and after.hidden_until != before.hidden_until
    assert after.task("matmul_fast").hidden != before.task("matmul_fast").hidden
    assert after.sha256 == before.sha256 == load_rubric(DEFAULT_RUBRIC, registry).sha256
    points = load_rubric(rewritten(tmp_path, "c.toml", hidden, ("uploads_per_hour = 6", "uploads_per_hour = 12"),
                                   ("case = 20", "case = 21"), until="2026-12-11T23:59:00+00:00"), registry)
    assert points.sha256 != before.sha256


def test_a_rubric_without_service_or_hidden_entries_keeps_the_digest_of_its_bytes(tmp_path, registry):
    """Stores graded before those tables existed hold the plain sha256 of the rubric's bytes."""
    import hashlib
    text = DEFAULT_RUBRIC.read_text()
    plain = tmp_path / "plain.toml"
    plain.write_text(text[:text.index("[service]")] + text[text.index("[gate]"):])
    assert load_rubric(plain, registry).sha256 == hashlib.sha256(plain.read_bytes()).hexdigest()


def test_a_layout_the_cut_does_not_know_falls_back_to_the_digest_of_the_whole_file(tmp_path, registry):
    import hashlib
    path = rewritten(tmp_path, "multi.toml", ('[tasks.matmul_fast]\n',
                                              '[tasks.matmul_fast]\nhidden = [\n  "4096x4096x4096",\n]\n'),
                     until="2026-12-11T23:59:00+00:00")
    loaded = load_rubric(path, registry)
    assert loaded.task("matmul_fast").hidden == ("4096x4096x4096",)
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_curve_gives_nothing_at_or_below_s_zero(rubric):
    fast = rubric.task("matmul_fast")
    assert fast.performance_credit(fast.s_zero) == 0
    assert fast.performance_credit(fast.s_zero / 2) == 0


def test_the_curve_gives_everything_at_or_above_s_full(rubric):
    fast = rubric.task("matmul_fast")
    assert fast.performance_credit(fast.s_full) == 1
    assert fast.performance_credit(3.0) == 1


def test_the_curve_is_linear_in_log_speedup_between(rubric):
    fast = rubric.task("matmul_fast")
    middle = math.sqrt(fast.s_zero * fast.s_full)  # halfway in log
    assert fast.performance_credit(middle) == pytest.approx(0.5)
    points = [fast.performance_credit(s) for s in (0.12, 0.2, 0.3, 0.5, 0.69)]
    assert points == sorted(points) and 0 < points[0] < points[-1] < 1
