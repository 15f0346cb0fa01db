"""The one backend interface (grader/backends/base.py): every implementation declares it, its defaults are what grading
relies on, and no caller asks a backend or a server with getattr whether it has an ability."""
from __future__ import annotations

import ast
import importlib
import time
from pathlib import Path

import pytest

from grader.backends.base import Backend, Kind
from grader.run.server import Server
from grader.backends.cpu import CpuBackend, CpuKind
from grader.backends.gpu import GpuBackend, GpuKind
from grader.run.budget import Credited, SolutionTimes, TimeBudget
from grader.backends.local import LocalBackend
from grader.grading.session import start_run
from grader.grading.student_process import StudentProcess
from grader.outcomes.isolation import Isolation
from grader.run.runner import HarnessServer
from grader.tests.cpu_like import CpuLikeBackend
from grader.tests.fakes import FakeBackend, FakeServer, SimulatedBackend, SimulatedKind

GRADER = Path(__file__).resolve().parents[1]
ABILITIES = {"build", "student_server", "solution_server", "sanitize", "set_limits", "timed", "clock", "identify",
             "pause", "uses_gpus", "checker", "sandbox", "harness_version", "violation", "check_gpu", "request",
             "close"}


def backends(tmp_path: Path) -> list[Backend]:
    from grader.tests.test_gate import GateOnly  # (the build gate's tests' backend: builds, runs nothing)
    return [LocalBackend(tmp_path / "local"), GpuBackend(tmp_path / "gpu"), CpuBackend(tmp_path / "cpu"),
            FakeBackend(), SimulatedBackend(), CpuLikeBackend(), GateOnly(workspace=None)]


def test_every_backend_is_the_interface_and_implements_every_abstract_ability(tmp_path):
    for backend in backends(tmp_path):  # instantiating one proves no abstract ability is left out
        assert isinstance(backend, Backend), type(backend).__name__


def test_every_kind_is_the_interface_and_says_whether_its_slurm_tasks_use_gpus():
    uses = {type(kind).__name__: kind.uses_gpus for kind in (GpuKind(), CpuKind(), SimulatedKind())}
    assert uses == {"GpuKind": True, "CpuKind": False, "SimulatedKind": True}
    assert all(isinstance(kind, Kind) for kind in (GpuKind(), CpuKind(), SimulatedKind()))


def test_every_server_is_the_interface():
    fake = FakeServer(None)
    budget = TimeBudget(2.0, 1.0, SolutionTimes(fake, 10))
    for server in (fake, StudentProcess(FakeBackend(), None, None), Credited(fake, budget)):
        assert isinstance(server, Server), type(server).__name__
    assert issubclass(HarnessServer, Server) and not HarnessServer.__abstractmethods__  # (it needs a harness to run)


def test_a_backend_that_leaves_out_an_ability_cannot_be_made_and_is_told_which():
    class NoSanitizer(Backend):
        harness_version, sandbox = "x", Isolation("none")

        def set_limits(self, limits):
            pass

        def build(self, sub, timeout, gate=None):
            pass

        def student_server(self, build, gpu):
            pass

        def solution_server(self, gpu):
            pass

    with pytest.raises(TypeError, match="sanitize"):
        NoSanitizer()


class Least(Backend):
    """Only what a backend must say."""
    harness_version, sandbox = "least-1", Isolation("none")

    def set_limits(self, limits):
        pass

    def build(self, sub, timeout, gate=None):
        raise AssertionError

    def student_server(self, build, gpu):
        raise AssertionError

    def solution_server(self, gpu):
        raise AssertionError

    def sanitize(self, *args, **kwargs):
        raise AssertionError


class Quiet(Server):
    def request(self, message, timeout):
        return {}

    def close(self):
        pass


def test_a_backends_defaults_are_a_timed_gpu_run_checked_by_compute_sanitizer_on_the_monotonic_clock():
    backend = Least()
    assert backend.timed is True and backend.checker == "compute-sanitizer"
    before = time.monotonic()
    assert before <= backend.clock() <= time.monotonic()
    assert backend.identify("0", {"name": "Some GPU"}) == {}  # the run's device record: the harness's words only
    assert backend.check_gpu("0") is None


def test_a_servers_defaults_are_nothing_to_pause_and_nothing_forged():
    server = Quiet()
    assert server.pause() is None and server.violation == ""


def test_the_student_process_pauses_its_server_and_reads_what_it_found_forged():
    class Pausing(Quiet):
        paused = 0

        def pause(self):
            self.paused += 1

        def close(self):
            self.violation = "forged"

    server = Pausing()

    class Serving(FakeBackend):
        def student_server(self, build, gpu):
            return server

    student = StudentProcess(Serving(), None, None)
    student.pause()  # no process yet: nothing to stop
    student.request({"op": "hello"}, 1)
    student.pause()
    assert server.paused == 1
    from grader.outcomes.results import CaseOutcome
    case = student.answered_by(CaseOutcome("add", "float32", "1x1", "correctness", "ok"))
    student.close()
    assert case.status == "protocol" and case.message == "forged"


class RunRecord:
    """Stands in for the store: keeps what a grading run would be started with."""

    def start_run(self, seed, harness_version, rubric_sha256, registry, devices, limits, isolation, command, **facts):
        self.devices, self.limits, self.facts = devices, limits, facts
        return 1


def test_a_run_on_a_backend_that_adds_nothing_records_the_harnesss_device_words_and_measures_its_limits(
        registry, small_rubric):
    store, solution = RunRecord(), FakeServer(None)
    start_run(store, {"0": solution}, 1, small_rubric, registry, FakeBackend(), "grade", ".", "plain")
    assert store.devices == [{"gpu": "0", "name": "Fake GPU", "sm_count": 1}]  # no "backend": readers take it as timed
    assert store.limits and solution.limits_measured  # timed by default: the GPU's limits are measured


def test_an_untimed_backend_measures_no_limits(registry, small_rubric):
    store, solution = RunRecord(), FakeServer(None)
    start_run(store, {"cpu": solution}, 1, small_rubric, registry, CpuLikeBackend(), "grade", ".", "plain")
    assert store.devices[0]["backend"] == "cpu" and store.limits == {} and not solution.limits_measured


def _ability_probes(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in ABILITIES:
            found.add(f"{node.func.id}(..., {node.args[1].value!r})")
    return found


# Probes of the same names on things that are not backends or servers.
NOT_BACKENDS = {"reports/feedback.py": {"getattr(..., 'checker')"}}  # a stored sanitizer row (an older store's)


def test_no_grader_module_asks_whether_a_backend_or_server_has_an_ability():
    probes = {str(p.relative_to(GRADER)): _ability_probes(ast.parse(p.read_text()))
              for p in GRADER.rglob("*.py") if "tests" not in p.parts}
    assert {path: found for path, found in probes.items() if found} == NOT_BACKENDS


def test_every_class_with_a_backends_or_servers_methods_declares_the_interface():
    """Module-level classes by import; classes inside a test by the name of what they derive from."""
    duck = []
    for path in GRADER.rglob("*.py"):
        module = ".".join(("grader",) + path.relative_to(GRADER).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        top = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        nested = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name not in top}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            wanted = Backend if methods & {"student_server", "solution_server"} else Server if _serves(node) else None
            if wanted is None:
                continue
            found = importlib.import_module(module)
            if node.name in top:
                declared = issubclass(getattr(found, node.name), wanted)
            else:  # defined in a function: what it derives from is the module's, or another such class's
                declared = any(_derives(base, _names(found, tree), nested, wanted) for base in node.bases)
            if not declared:
                duck.append(f"{module}.{node.name}")
    assert duck == []


def _serves(node: ast.ClassDef) -> bool:
    """A class whose request(message, timeout) answers the harness's protocol."""
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "request":
            return [a.arg for a in item.args.args[1:3]] == ["message", "timeout"]
    return False


def _derives(base: ast.expr, names: dict, nested: dict[str, ast.ClassDef], wanted: type) -> bool:
    if isinstance(base, ast.Name) and isinstance(names.get(base.id), type):
        return issubclass(names[base.id], wanted)
    if isinstance(base, ast.Name) and base.id in nested:
        return any(_derives(b, names, nested, wanted) for b in nested[base.id].bases)
    return False


def _names(module, tree: ast.AST) -> dict:
    """The module's own names, and those its functions import."""
    names = dict(vars(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            source = importlib.import_module(node.module)
            names.update({(a.asname or a.name): getattr(source, a.name, None) for a in node.names})
    return names
