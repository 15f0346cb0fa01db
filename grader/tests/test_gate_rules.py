"""The build gate's rules: read from the rubric, checked, loosened per task, and exported for the pre-check."""
from __future__ import annotations

import json

import pytest

from grader.cli import main
from grader.gate.check import check_symbols
from grader.gate.objects import ObjectFacts
from grader.core.gate_policy import gate_tables_text
from grader.core.rubric import DEFAULT_RUBRIC, RubricError, load_rubric
from grader.tests.conftest import REPO
from grader.tests.test_rubric import broken

RULES_JSON = REPO / "starter" / "tools" / "rules.json"


def test_the_committed_precheck_rules_match_the_rubric(rubric):
    assert RULES_JSON.read_text() == rubric.student_rules_text(), \
        "starter/tools/rules.json is out of date: run `bin/grader rules --export starter/tools/rules.json`"


def test_rules_export_writes_what_the_precheck_reads(tmp_path, capsys):
    out = tmp_path / "rules.json"
    assert main(["rules", "--export", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["files"]) == {"add.cu", "dot.cu", "fill.cu", "matmul_fast.cu", "matmul_naive.cu",
                                  "matmul_tiled.cu", "transpose.cu"}
    assert "no-libraries" in data["rules"] and data["rules"]["no-syscalls"]["instructions"]
    assert data["sanitizer"] == {"tools": ["memcheck", "racecheck"], "penalty": 0.25}


@pytest.mark.parametrize("symbol, rule", [
    ("cublasSgemm_v2", "no-libraries"),
    ("void thrust::sort<float*>(float*, float*)", "no-libraries"),
    ("fopen64", "no-file-io"),
    ("truncate", "no-file-io"),  # a rule's own list wins over the allowlist's trunc*
    ("vtable for std::basic_ofstream<char, std::char_traits<char> >", "no-file-io"),
    ("socket", "no-network"),
    ("dlsym", "no-dynamic-loading"),
    ("cudaGetDriverEntryPoint", "no-dynamic-loading"),
    ("fork", "no-processes"),
    ("std::thread::_M_start_thread(std::unique_ptr<std::thread::_State, std::default_delete<std::thread::_State> >, "
     "void (*)())", "no-processes"),
    ("mprotect", "no-memory-mapping"),
    ("cudaStreamCreateWithFlags", "no-streams-events"),
    ("cudaEventRecord", "no-streams-events"),
    ("syscall", "no-syscalls"),
    ("login", "only-listed-calls"),  # not log*: only the logarithms are listed
    ("getenv", "only-listed-calls"),
    ("equal_on_device(void const*, void const*, unsigned long)", "only-listed-calls"),
])
def test_a_forbidden_symbol_names_the_rule_it_breaks(rubric, symbol, rule):
    assert rubric.gate.for_task("matmul_fast").symbol_rule(symbol) == rule


@pytest.mark.parametrize("symbol", [
    "__cudaLaunchKernel", "__cudaRegisterFunction", "cudaLaunchKernelExC", "cudaFuncSetAttribute",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cudaGetLastError", "cudaMemsetAsync",
    "cudaMalloc", "cudaDeviceSynchronize", "printf", "std::cout", "vprintf", "__assertfail", "sqrtf", "expf",
    "memcpy@GLIBC_2.14", "__cxa_guard_acquire", "operator new(unsigned long)", "std::__throw_length_error(char const*)",
    "std::runtime_error::runtime_error(std::__cxx11::basic_string<char, std::char_traits<char>, "
    "std::allocator<char> > const&)", "std::ios_base::Init::Init()", "exit", "abort",
])
def test_what_a_kernel_launcher_needs_is_allowed(rubric, symbol):
    assert rubric.gate.for_task("dot").symbol_rule(symbol) is None


def test_a_checked_copy_is_judged_and_named_as_the_function_the_source_called(rubric, tmp_path):
    """_FORTIFY_SOURCE (default in some compilers) turns dprintf into __dprintf_chk and printf into __printf_chk:
    the first is still refused and the student reads the name they wrote; the second is still printing."""
    facts = ObjectFacts(tmp_path / "dot.o", undefined=["__dprintf_chk", "__printf_chk", "__memcpy_chk@GLIBC_2.3.4",
                                                         "__stack_chk_fail", "__read_chk"])
    findings = check_symbols(facts, rubric.gate.for_task("dot"))
    assert [(f.rule, f.what) for f in findings] == [("only-listed-calls", "calls dprintf"),
                                                    (rubric.gate.for_task("dot").symbol_rule("read"), "calls read")]


@pytest.mark.parametrize("header, quoted, rule", [
    ("cuda_check.h", True, None), ("tasks.h", False, None), ("vector", False, None), ("cuda/pipeline", False, None),
    ("cooperative_groups/reduce.h", False, None), ("cuda_fp16.h", False, None),
    ("cublas_v2.h", False, "no-libraries"), ("thrust/sort.h", False, "no-libraries"),
    ("thread", False, "no-processes"), ("fstream", False, "no-file-io"), ("sys/mman.h", False, "no-memory-mapping"),
    ("dlfcn.h", False, "no-dynamic-loading"), ("sys/time.h", False, "includes"),
    ("../../solution/kernels/matmul_fast.cu", True, "includes"), ("/etc/passwd", False, "includes"),
    ("vector", True, "includes"),  # quotes are for the assignment's own headers
])
def test_headers_are_judged_by_name(rubric, header, quoted, rule):
    assert rubric.gate.for_task("add").header_rule(header, quoted) == rule


def test_a_task_can_be_allowed_a_rule_and_more_symbols(tmp_path, registry):
    path = broken(tmp_path, "[tasks.dot]", '[tasks.matmul_fast.gate]\nallow = ["no-libraries"]\n'
                                           'allow_symbols = ["cudaStreamQuery"]\nallow_headers = ["sys/time.h"]\n\n'
                                           "[tasks.dot]")
    gate = load_rubric(path, registry).gate
    fast, dot = gate.for_task("matmul_fast"), gate.for_task("dot")
    assert fast.symbol_rule("cublasSgemm_v2") is None and fast.header_rule("cublas_v2.h", False) is None
    assert fast.symbol_rule("cudaStreamQuery") is None and fast.header_rule("sys/time.h", False) is None
    assert fast.symbol_rule("fopen") == "no-file-io"  # the other rules still hold
    assert dot.symbol_rule("cublasSgemm_v2") == "no-libraries" and dot.symbol_rule("cudaStreamQuery") is not None
    assert gate.to_json()["files"]["matmul_fast.cu"]["allow"] == ["no-libraries"]


def test_a_rubric_without_the_gate_is_refused(tmp_path, registry):
    text = DEFAULT_RUBRIC.read_text()
    path = tmp_path / "rubric.toml"
    path.write_text(text.replace(gate_tables_text(text).strip(), ""))
    with pytest.raises(RubricError, match=r"missing the \[gate\] table"):
        load_rubric(path, registry)


@pytest.mark.parametrize("old, new, complaint", [
    ("[gate.rules.no-redefinition]", "[gate.rules.no-redefinitions]", "missing the rule 'no-redefinition'"),
    ('[gate.rules.no-network]\ndescription = "a task file may not use the network"',
     '[gate.rules.no-network]\ndescription = ""', "[gate.rules.no-network]: 'description' must say"),
    ('[gate.rules.no-network]\n', '[gate.rules.no-network]\nsymbol = ["socket"]\n',
     "[gate.rules.no-network]: unknown key 'symbol'"),
    ("[tasks.dot]", '[tasks.add.gate]\nallow = ["no-sockets"]\n\n[tasks.dot]',
     "[tasks.add.gate]: 'allow' names the rule 'no-sockets'"),
    ("[tasks.dot]", '[tasks.add.gate]\nallow = ["includes"]\n\n[tasks.dot]',
     "'includes' cannot be turned off: widen it with allow_headers"),
    ("[tasks.dot]", '[tasks.add.gate]\nallow_symbols = "fopen"\n\n[tasks.dot]',
     "[tasks.add.gate]: 'allow_symbols' must be a list"),
    ("[tasks.dot]", '[tasks.add.gate]\nallowed = ["no-libraries"]\n\n[tasks.dot]',
     "[tasks.add.gate]: unknown key 'allowed'"),
    ('cuda-sync = ["cudaDeviceSynchronize"]', "cuda-sync = []", "[gate.allowed]: 'cuda-sync' must not be empty"),
])
def test_a_broken_gate_section_is_refused_with_the_entry_named(tmp_path, registry, old, new, complaint):
    path = broken(tmp_path, old, new)
    with pytest.raises(RubricError) as e:
        load_rubric(path, registry)
    assert str(e.value).startswith(str(path)) and complaint in str(e.value)
