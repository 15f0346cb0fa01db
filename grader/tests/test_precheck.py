"""starter/tools/precheck.py: the students' pre-check of the gate's rules, on source text."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from grader.gate.build_gate import load_precheck
from grader.tests.conftest import REPO

pytestmark = pytest.mark.slow  # asks the compiler (g++) for its include lists and runs make precheck

PRECHECK = REPO / "starter" / "tools" / "precheck.py"
RULES = json.loads((REPO / "starter" / "tools" / "rules.json").read_text())
SUBMITTED = sorted([*(REPO / "solution" / "kernels").glob("*.cu"), *(REPO / "starter" / "kernels").glob("*.cu"),
                    *(REPO / "data" / "sample-submissions").glob("*/*.cu")])
LAUNCHER = '#include "cuda_check.h"\n#include "tasks.h"\n'


def problems(text: str, file: str = "dot.cu"):
    return [(p.line, p.rule, p.what) for p in load_precheck().check_text(text, file, RULES)]


def run(*args, cwd=REPO / "starter"):
    return subprocess.run([sys.executable, str(PRECHECK), *map(str, args)], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("path", SUBMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_the_solution_the_stubs_and_the_sample_class_are_clean(path):
    assert load_precheck().check_file(path, RULES) == []


@pytest.mark.parametrize("line, rule", [
    ('#include "../../solution/kernels/dot.cu"', "includes"),
    ("#include </etc/passwd>", "includes"),
    ('#include "/work/main/solution/kernels/dot.cu"', "includes"),
    ("#include <cublas_v2.h>", "no-libraries"),
    ("#include <thrust/reduce.h>", "no-libraries"),
    ("#include <thread>", "no-processes"),
    ("#include <fstream>", "no-file-io"),
    ("#include <sys/mman.h>", "no-memory-mapping"),
    ("#include <sys/time.h>", "includes"),
    ("#include <dlfcn.h>", "no-dynamic-loading"),
    ("#include_next <thread>", "no-processes"),
    ('#import "tasks.h"', None),
])
def test_an_include_outside_the_allowed_headers_is_refused(line, rule):
    found = problems(LAUNCHER + line + "\n")
    assert [r for _, r, _ in found] == ([rule] if rule else [])
    if rule:
        assert found[0][0] == 3


def test_includes_hidden_by_splices_digraphs_or_macros_are_still_seen():
    text = LAUNCHER + "#inc\\\nlude <thread>\n  %: include <fstream>\n#define H <dlfcn.h>\n#include H\n"
    assert problems(text) == [(3, "no-processes", "#includes <thread>"), (5, "no-file-io", "#includes <fstream>"),
                              (7, "includes", "#includes something other than \"file\" or <file> (a macro): H")]


def test_comments_strings_and_raw_strings_are_not_code():
    text = LAUNCHER + ('// #include <thread>  fopen("x")\n/* system("ls");\n   fork(); */\n'
                       'const char* a = "fopen(\\"x\\") #include <thread>";\n'
                       'const char* b = R"tag(fork(); )" system("x") )tag";\nint n = 1\'000\'000; char q = \'"\';\n'
                       'void f() { obj.close(); other::fork(); }\n')
    assert problems(text) == []


@pytest.mark.parametrize("code, rule, what", [
    ('FILE* f = fopen("/tmp/x", "w");', "no-file-io", "calls fopen"),
    ('std::fopen("x", "r");', "no-file-io", "calls fopen"),
    ('if (ready) return fopen("x", "r");', "no-file-io", "calls fopen"),
    ("std::ofstream out;", "no-file-io", "uses std::ofstream"),
    ("int s = socket(2, 1, 0);", "no-network", "calls socket"),
    ('void* h = dlopen("libcublas.so", 2);', "no-dynamic-loading", "calls dlopen"),
    ("for (;;) fork();", "no-processes", "calls fork"),
    ('system("ls");', "no-processes", "calls system"),
    ("std::thread t([] {});", "no-processes", "uses std::thread"),
    ("mprotect(p, 4096, 7);", "no-memory-mapping", "calls mprotect"),
    ("cudaStream_t s; cudaStreamCreate(&s);", "no-streams-events", "calls cudaStreamCreate"),
    ("cudaEventRecord(e);", "no-streams-events", "calls cudaEventRecord"),
    ("cublasSgemm(h, 0, 0);", "no-libraries", "calls cublasSgemm"),
    ('asm volatile("mov $60, %%eax\\n\\tsyscall" ::: "memory");', "no-syscalls",
     "uses the instruction `syscall` in inline assembly"),
    ('__asm__("int $0x80");', "no-syscalls", "uses the instruction `int $0x80` in inline assembly"),
    ("syscall(39);", "no-syscalls", "calls syscall"),
])
def test_a_forbidden_call_is_reported_on_its_line(code, rule, what):
    assert problems(LAUNCHER + "void f() {\n    " + code + "\n}\n") == [(4, rule, what)]


def test_device_assembly_and_ordinary_code_pass():
    text = LAUNCHER + ('__device__ void wait() { asm volatile("cp.async.wait_group 0;\\n" ::); }\n'
                       "static int read(const float* p);\nstd::vector<int> send(int k);\nchar* write(int n);\n"
                       "static_assert(sizeof(int) == 4, \"int\");\nint stat_count = 0;\n"
                       "void f() { static std::vector<float> scratch; printf(\"%d\", stat_count); }\n")
    assert problems(text) == []


@pytest.mark.parametrize("code", [
    "__attribute__((constructor)) static void early() {}",
    "[[gnu::destructor]] void late() {}",
    '__attribute__((section(".init_array"))) void (*hook)() = nullptr;',
    "std::string name = \"x\";",
    "static std::vector<float> cache;",
    "std::vector<int> v{1, 2};",
    "namespace { std::map<int, int> memo; }",
])
def test_code_that_would_run_before_main_is_reported(code):
    assert [r for _, r, _ in problems(LAUNCHER + code + "\n")] == ["no-static-constructors"]


def test_function_declarations_and_members_are_not_global_objects():
    text = LAUNCHER + ("std::string make_name(int x);\nstruct S { std::string s; };\n"
                       "void f() { std::string local = \"ok\"; }\n")
    assert problems(text) == []


def test_a_task_allowed_a_rule_is_not_told_off_for_it():
    rules = json.loads(json.dumps(RULES))
    rules["files"]["matmul_fast.cu"]["allow"] = ["no-libraries"]
    text = LAUNCHER + "#include <cublas_v2.h>\nvoid f() { cublasSgemm(h); }\n"
    check = load_precheck().check_text
    assert check(text, "matmul_fast.cu", rules) == []
    assert [p.rule for p in check(text, "dot.cu", rules)] == ["no-libraries", "no-libraries"]


def test_the_command_line_prints_compiler_style_errors_and_exits_1(tmp_path):
    bad = tmp_path / "matmul_fast.cu"
    bad.write_text(LAUNCHER + "#include <cublas_v2.h>\n")
    out = run(bad)
    assert out.returncode == 1
    assert f"{bad}:3:1: error: #includes <cublas_v2.h>: library calls are not allowed" in out.stdout
    assert "(rule: no-libraries)\n    3 | #include <cublas_v2.h>" in out.stdout
    assert out.stdout.strip().endswith("precheck: 1 problem in 1 file")


def test_the_command_line_passes_clean_files_and_speaks_json(tmp_path):
    out = run("kernels/dot.cu", "kernels/add.cu")
    assert out.returncode == 0 and "precheck: 2 files clean" in out.stdout
    bad = tmp_path / "dot.cu"
    bad.write_text(LAUNCHER + "void f() { fork(); }\n")
    out = run("--json", bad)
    assert out.returncode == 1
    assert json.loads(out.stdout)[0] | {"file": ""} == {"file": "", "line": 3, "column": 12, "rule": "no-processes",
                                                         "what": "calls fork", "source": "void f() { fork(); }",
                                                         "description": RULES["rules"]["no-processes"]["description"]}


def test_the_command_line_says_what_it_cannot_do(tmp_path):
    assert run(tmp_path / "nope.cu").returncode == 2
    assert run("--rules", tmp_path / "none.json", "kernels/dot.cu").returncode == 2
    other = tmp_path / "helper.cu"
    other.write_text(LAUNCHER)
    out = run(other)
    assert out.returncode == 0 and "helper.cu is not a task file; the grader ignores it" in out.stdout


def test_make_precheck_checks_every_kernel_file():
    out = subprocess.run(["make", "-s", "-C", str(REPO / "starter"), "precheck"], capture_output=True, text=True)
    assert out.returncode == 0 and "precheck: 7 files clean" in out.stdout


@pytest.mark.parametrize("text, rule", [
    ("#inc\\ \nlude <thread>\n", "no-processes"),  # a backslash, a space, then the newline: GCC splices it
    ("#include <thread>\\\t \n\n", "no-processes"),
    ("int a = 1;\r#include </etc/passwd>\rint b;\n", "includes"),  # a lone carriage return ends a line for GCC
    ("// a comment\r#include <fstream>\n", "no-file-io"),  # ... so this is not in the comment
    ('asm(".inc" "bin \\"/etc/passwd\\"");\n', "includes"),  # adjacent literals are one string
    ('#define S(x) #x\nasm(S(.incbin "/etc/passwd"));\n', "includes"),  # a directive made a string by a macro
])
def test_includes_split_or_hidden_the_ways_gcc_accepts_are_seen(text, rule):
    found = problems(LAUNCHER + text)
    assert rule in [r for _, r, _ in found], found


def test_line_numbers_count_a_lone_carriage_return_as_gcc_does():
    [(line, rule, _)] = problems(LAUNCHER + "int a;\rint b;\r#include <thread>\n")
    assert (line, rule) == (5, "no-processes")


@pytest.mark.parametrize("unit", ["asm(", "asm(asm(\"", "{", "'", "fopen(", "1'", '"a', "#\n", "/*", "R\"x("])
def test_the_check_is_linear_on_inputs_made_to_be_slow(unit):
    """48 KiB of `asm(` inside `#if 0` once took 313 s: every kind of repeated opening now stays fast at the
    largest file the check reads (256 KiB)."""
    import time
    text = LAUNCHER + "#if 0\n" + unit * (250_000 // len(unit)) + "\n#endif\n"
    start = time.monotonic()
    load_precheck().check_text(text, "dot.cu", RULES)
    assert time.monotonic() - start < 15


def test_a_file_over_the_size_limit_is_one_problem_and_not_read():
    rules = {**RULES, "limits": {"file_kib": 1, "seconds": 20}}
    found = load_precheck().check_text(LAUNCHER + "x" * 2000, "dot.cu", rules)
    assert [(p.rule, p.what) for p in found] == [("includes", "is 2 KiB, larger than the 1 KiB a task file may be "
                                                              "(not checked)")]


def test_a_check_that_outlives_its_time_limit_is_one_problem():
    rules = {**RULES, "limits": {"file_kib": 1024, "seconds": 1e-9}}
    found = load_precheck().check_text(LAUNCHER + "'a' " * 20000, "dot.cu", rules)
    assert [(p.rule, p.what) for p in found] == [("includes", "took longer than 1e-09 s to check (not checked)")]


# --- what the compiler read decides (tools/includes.py) -----------------------------------------------------------

INCLUDES = REPO / "starter" / "tools" / "includes.py"
HIDDEN = {  # an #include a line parser misses, and the rule the compiler's list brings it under
    "bom": ("\ufeff#include <thread>\n", "no-processes"),
    "vertical-tab": ("\v#include <fstream>\n", "no-file-io"),
    "form-feed": ("\f#include <sys/socket.h>\n", "no-network"),
    "macro": ("#define H <thread>\n#include H\n", "no-processes"),
    "device-only": ("#ifdef __CUDA_ARCH__\n#include <mutex>\n#endif\n", "no-processes"),
    "host-only": ("#ifndef __CUDA_ARCH__\n#include <dlfcn.h>\n#endif\n", "no-dynamic-loading"),
    "by-path": ('#include "../harness/serve.h"\n', "includes"),
}


def compiler_listing(tmp_path, text: str) -> dict:
    """tools/includes.py over the CPU backend's preprocessor (g++, both views of the file), as make includes
    runs it on the CPU."""
    source = tmp_path / "kernels" / "dot.cu"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(text + LAUNCHER)  # first: a byte-order mark hides an #include only at the file's start
    out = tmp_path / "dot.includes"
    starter = REPO / "starter"
    done = subprocess.run([sys.executable, str(INCLUDES), "--out", str(out), "--project", "include", "--system",
                           "cpu/include", "--view=-Xcompiler -H", "--view=-Xcompiler -H,-D__CUDA_ARCH__=900", "--",
                           sys.executable, "cpu/cudacpu.py", "compile", "-std=c++17", "-Iinclude", "-Iharness", "-E",
                           str(source), "-o", "/dev/null"], cwd=starter, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stdout + done.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", HIDDEN)
def test_an_include_the_compiler_reads_is_judged_however_it_is_written(tmp_path, name):
    text, rule = HIDDEN[name]
    listing = compiler_listing(tmp_path, text)
    assert rule not in [p.rule for p in load_precheck().check_text(text + LAUNCHER, "dot.cu", RULES)] or \
        name in ("macro", "device-only", "host-only", "by-path"), "the line parser alone already saw it"
    found = load_precheck().check_text(text + LAUNCHER, "dot.cu", RULES, listing=listing)
    assert rule in [p.rule for p in found], ([(p.rule, p.what) for p in found], listing)


def test_the_compilers_list_of_an_honest_file_is_clean_and_names_headers_as_an_include_does(tmp_path):
    solution = (REPO / "solution" / "kernels" / "dot.cu").read_text()
    listing = compiler_listing(tmp_path, solution.replace(LAUNCHER, ""))  # (the launcher lines come back)
    assert {(i["name"], i["place"]) for i in listing["includes"]} >= {("cuda_check.h", "project"),
                                                                       ("tasks.h", "project")}
    assert load_precheck().check_text(solution, "dot.cu", RULES, listing=listing) == []


def test_a_quoted_system_header_is_what_the_compiler_read_not_what_the_line_looked_like(tmp_path):
    """The line parser refuses `#include "vector"` (quotes are for the assignment's headers); the compiler found
    the standard library's <vector>, which the rules allow: what it read decides."""
    listing = compiler_listing(tmp_path, '#include "vector"\n')
    assert ("vector", "system") in {(i["name"], i["place"]) for i in listing["includes"]}
    assert load_precheck().check_text('#include "vector"\n' + LAUNCHER, "dot.cu", RULES, listing=listing) == []


def test_a_file_whose_includes_could_not_be_read_is_refused():
    found = load_precheck().check_text(LAUNCHER, "dot.cu", RULES, listing={"error": "no list was made"})
    assert [(p.rule, p.what) for p in found] == [("includes", "could not be read by the preprocessor (no list was "
                                                              "made)")]
