"""The grader's layers (grader/__init__.py's LAYERS): every module sits in one, imports only downward, no import
circle anywhere, and one submission's grading passes intake, build, run, score and store once each, in order."""
from __future__ import annotations

import ast
import sys
import threading

import pytest
from pathlib import Path

from grader import LAYERS
from grader.grading.grade import GradeOptions, grade
from grader.tests.conftest import write_submission
from grader.tests.fakes import FakeBackend

GRADER = Path(__file__).resolve().parents[1]
TOP = ("cli", "__main__")  # the command line, above every layer


def product_modules() -> dict[str, Path]:
    """Every module of the grader but its tests, by dotted name under grader."""
    found = {}
    for path in sorted(GRADER.rglob("*.py")):
        parts = path.relative_to(GRADER).with_suffix("").parts
        if parts[0] == "tests":
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The grader modules a module imports, wherever the import stands (in a function, under TYPE_CHECKING)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named |= {a.name.removeprefix("grader.") for a in node.names if a.name.startswith("grader.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] if package else [])
                module = ".".join(p for p in (base, node.module or "") if p)
            elif node.module and (node.module == "grader" or node.module.startswith("grader.")):
                module = node.module.removeprefix("grader").lstrip(".")
            else:
                continue
            named |= {f"{module}.{a.name}".lstrip(".") for a in node.names} | {module}
    return {m for m in named if m in modules and m != name}


def layer_of(name: str) -> str:
    return name.split(".")[0] if name else ""


def test_every_module_sits_in_a_layer():
    strays = [name for name in product_modules() if name and layer_of(name) not in LAYERS + TOP]
    assert strays == [], f"modules outside every layer of grader/__init__.py's LAYERS: {strays}"


def test_each_module_imports_only_from_its_layer_and_the_layers_below():
    modules = product_modules()
    order = {layer: i for i, layer in enumerate(LAYERS + TOP)}
    upward = [f"{name} ({layer_of(name)}) imports {other} ({layer_of(other)})"
              for name, path in modules.items() if name for other in imports(path, name, modules)
              if other and order[layer_of(other)] > order[layer_of(name)]]
    assert upward == []


# The readers of what grading produced: they read outcomes (grader/outcomes/) and the store, never the layer that
# runs student code, so a change to how code runs cannot reach a score, a saved row or a report's words.
READERS = ("scoring", "store", "reports", "exports")


def test_the_readers_of_results_import_nothing_of_the_layer_that_runs_student_code():
    modules = product_modules()
    found = sorted((name, i) for name, path in modules.items() if layer_of(name) in READERS
                   for i in imports(path, name, modules) if layer_of(i) in ("run", "backends"))
    assert found == [], f"readers importing how student code runs (their types belong in grader/outcomes/): {found}"


def test_no_import_circle_in_the_grader():
    modules = product_modules()
    graph = {name: imports(path, name, modules) - {""} for name, path in modules.items()}
    circles, index, low, stack, on_stack = [], {}, {}, [], set()

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert circles == []


def test_one_submission_passes_intake_build_run_score_and_store_once_each_in_that_order(tmp_path, registry,
                                                                                        small_rubric):
    """The steps of one submission's path, as grade() takes them: read at intake, built by the backend, run (the
    run layer's calls from grade_submission), scored (any call of the scoring layer), stored (the store writing
    what the chain made of it: Store.save runs the chain inside its transaction, before it writes, so that an
    override made meanwhile is counted or not yet made). A step that came back after the next had begun would show twice."""
    write_submission(tmp_path / "subs", "amy", {t.file: "// fake: ok speed=1.0\n" for t in registry.tasks})
    steps = []

    def watch(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename.startswith(str(GRADER / "intake")) and code.co_name == "read_submission":
            steps.append("intake")
        elif code.co_name == "build" and isinstance(frame.f_locals.get("self"), FakeBackend):
            steps.append("build")
        elif code.co_filename.startswith(str(GRADER / "run")) and _inside(frame, "grade_submission"):
            steps.append("run")
        elif code.co_filename.startswith(str(GRADER / "scoring")):
            steps.append("score")
        elif code.co_qualname == "Store._write_scored":
            steps.append("store")

    sys.setprofile(watch)
    threading.setprofile(watch)
    try:
        grade(GradeOptions(tmp_path / "subs", tmp_path / "results", [None], jobs=1, progress=False, seed=1),
              small_rubric, registry, FakeBackend())
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    walked = [step for i, step in enumerate(steps) if i == 0 or steps[i - 1] != step]
    assert walked == ["intake", "build", "run", "score", "store"]


def _inside(frame, function: str) -> bool:
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


# The drivers of a grading session (grader/grading/session.py) and what each may not touch: what a submission's
# grading does (build, cases, tools, scoring) is the session's, reached only through it.
DRIVERS = ("grading.grade", "service.worker", "slurm.shard")
GRADING_INSIDES = ("run", "scoring", "gate", "grading.cases", "grading.tools", "grading.student_process",
                   "grading.caps")
# what a driver may name from inside: the sandbox it sets up for the backend, as the command line does (where code
# runs, not what grading does); the results' and builds' types are grader/outcomes/'s, outside these
TYPES_ONLY = {"run.sandbox"}
BACKEND_WORK = {"build", "student_server", "solution_server", "sanitize", "sanitize_tasks", "profile", "gpu_profile"}


def driver_findings(source: str, name: str, modules: dict[str, Path], path: Path) -> list[str]:
    found = [f"imports {m}" for m in sorted(imports(path, name, modules))
             if any(m == inside or m.startswith(inside + ".") for inside in GRADING_INSIDES)
             and m not in TYPES_ONLY and m.rpartition(".")[0] not in TYPES_ONLY]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BACKEND_WORK \
                and not (isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "session") \
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "session"):
            found.append(f"line {node.lineno}: calls .{node.func.attr}() itself")
    return found


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_driver_of_the_grading_session_holds_no_grading_logic(driver):
    modules = product_modules()
    path = modules[driver]
    assert driver_findings(path.read_text(), driver, modules, path) == [], \
        f"{path}: hand the submission to the grading session (grader/grading/session.py)"


def test_the_driver_check_finds_a_driver_that_builds_or_scores_itself(tmp_path):
    modules = product_modules()
    fake = tmp_path / "worker.py"
    fake.write_text("from grader.scoring.chain import chain_for_result\nfrom grader.outcomes.results import CaseOutcome\n"
                    "def go(backend, sub):\n    return backend.build(sub, 1, None)\n")
    found = driver_findings(fake.read_text(), "service.worker", modules, fake)
    assert "imports scoring.chain" in found and any(".build()" in f for f in found)
    assert not any("run.results" in f for f in found)
