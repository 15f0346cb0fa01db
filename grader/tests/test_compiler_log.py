"""grader/backends/compiler_log.py: a student reads the compiler's messages, and the lines it quotes of their own files only."""
from __future__ import annotations

from grader.backends.compiler_log import own_messages


def own(path: str) -> bool:
    return path.startswith("kernels/")


GCC = """kernels/dot.cu: In function 'void dot(const float*, const float*, float*, int)':
kernels/dot.cu:12:5: error: 'sum' was not declared in this scope
   12 |     sum += x[i];
      |     ^~~
In file included from kernels/dot.cu:3:
/etc/secret.h:1:1: error: 'root' does not name a type
    1 | root:x:0:0:the secret line
      | ^~~~
/usr/include/c++/12/bits/stl_vector.h:1287:7: note: candidate: 'void push_back(const value_type&)'
 1287 |       push_back(const value_type& __x)
      |       ^~~~~~~~~
dot.cu does not compile (the compiler's messages are above): its task fails, the others still run"""


def test_gccs_quotes_of_other_files_go_and_its_messages_and_the_students_own_quotes_stay():
    kept = own_messages(GCC, own)
    assert "    sum += x[i];" in kept.replace("   12 |", "")
    assert "root:x:0:0" not in kept and "push_back(const value_type& __x)" not in kept
    assert "/etc/secret.h:1:1: error: 'root' does not name a type" in kept  # where, and the compiler's words
    assert "In file included from kernels/dot.cu:3:" in kept
    assert kept.splitlines()[-1].startswith("dot.cu does not compile")


NVCC = """kernels/add.cu(9): error: identifier "bad" is undefined
      c[i] = bad;
             ^
/usr/local/cuda/include/crt/host_defines.h(54): warning: something about the header
  #define __noinline__ secret_text_here
          ^
1 error detected in the compilation of "kernels/add.cu"."""


def test_nvccs_format_quotes_then_carets_is_filtered_the_same_way():
    kept = own_messages(NVCC, own)
    assert "c[i] = bad;" in kept and "secret_text_here" not in kept
    assert "host_defines.h(54): warning" in kept and kept.endswith('compilation of "kernels/add.cu".')


def test_text_without_messages_is_left_as_it_is():
    text = "make: building\nlinking build/harness\n"
    assert own_messages(text, own) == text
