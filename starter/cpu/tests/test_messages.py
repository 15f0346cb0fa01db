"""driver/messages.py on the compilers' real output: what g++ 12 and clang 19 said about the corpus of mistakes
(solution/tests/compile_mistakes/, captured in tests/messages/), told back in terms of the student's file. No
compiler runs here; solution/tests/test_compile_mistakes.py compiles the same corpus for real.

Run by run_tests.py, or alone: python3 -m unittest -v test_messages (from tests/).
"""
from __future__ import annotations

import re
import sys
import unittest
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CPU = TESTS.parent
ROOT = CPU.parent.parent
FIXTURES = TESTS / "messages"
sys.path.insert(0, str(CPU))
sys.path.insert(0, str(ROOT / "solution" / "tests" / "compile_mistakes"))
import mistakes  # noqa: E402
from mistakes import HEADER, INTERNAL, QUOTE  # noqa: E402
from driver.messages import LineMap, clean  # noqa: E402
from driver.rewrite import rewrite  # noqa: E402


def cleaned(fixture: Path) -> tuple[str, str, str]:
    """(the student's file as the compiler named it, its text, messages.py's output) for a captured output."""
    name, compiler = fixture.name.split(".")[:2]
    display = f"solution/tests/compile_mistakes/{name}.cu"  # where the captures were compiled (mistakes.write)
    original = mistakes.text(name)
    return display, original, clean(fixture.read_text(), display, original, rewrite(original).text,
                                    display_columns=compiler.startswith("gcc"))


def fixtures() -> list[Path]:
    found = sorted(FIXTURES.glob("*.txt"))
    assert len(found) >= 20, f"the captured outputs are missing from {FIXTURES}"
    return found


class CapturedOutputs(unittest.TestCase):
    def test_first_diagnostic_is_at_the_mistake_in_the_students_words(self) -> None:
        for fixture in fixtures():
            with self.subTest(fixture.name):
                display, original, out = cleaned(fixture)
                lines = out.splitlines()
                first = next(m for m in map(HEADER.match, lines) if m and m.group("kind") != "note")
                self.assertEqual(first.group("file"), display)
                self.assertEqual(int(first.group("line")), mistakes.line(Path(display).stem))
                line = original.splitlines()[int(first.group("line")) - 1]
                self.assertLessEqual(int(first.group("col")), len(line) + 1)
                self.assertNotRegex(out, INTERNAL)
                self.assertLessEqual(len(lines), 25, out)

    def test_every_quoted_line_of_the_students_file_is_theirs(self) -> None:
        for fixture in fixtures():
            with self.subTest(fixture.name):
                display, original, out = cleaned(fixture)
                theirs = original.splitlines()
                about_theirs = False
                for text in out.splitlines():
                    header = HEADER.match(text)
                    if header:
                        about_theirs = header.group("file") == display
                    quote = QUOTE.match(text)
                    if quote and about_theirs:
                        self.assertEqual(quote.group("text"), theirs[int(quote.group("line")) - 1].expandtabs(8))

    def test_each_error_once(self) -> None:
        for fixture in fixtures():
            with self.subTest(fixture.name):
                _, _, out = cleaned(fixture)
                errors = [re.sub(r"'[^']*'", "''", t) for t in out.splitlines() if ": error: " in t]
                self.assertEqual(len(errors), len(set(errors)), out)
        # The float and the int instantiation of add's launch: g++ said it twice, with their contexts.
        _, _, out = cleaned(FIXTURES / "01-too-few-arguments.gcc12.txt")
        self.assertEqual(out.count(": error: "), 1, out)
        self.assertNotIn("[with T = int]", out)

    def test_clangs_count_of_errors_is_the_count_shown(self) -> None:
        for fixture in fixtures():
            with self.subTest(fixture.name):
                _, _, out = cleaned(fixture)
                totals = [t for t in out.splitlines() if t.endswith(" generated.")]
                if "clang" not in fixture.name or not totals:
                    continue
                errors = len([t for t in out.splitlines() if HEADER.match(t) and ": error: " in t])
                warnings = len([t for t in out.splitlines() if HEADER.match(t) and ": warning: " in t])
                said = [f"{n} {w}{'s' if n != 1 else ''}" for n, w in ((warnings, "warning"), (errors, "error")) if n]
                self.assertEqual(totals, [" and ".join(said) + " generated."], out)
        # clang said "2 errors generated.": the same mistake in the float and the int launch
        _, _, out = cleaned(FIXTURES / "01-too-few-arguments.clang19.txt")
        self.assertIn("\n1 error generated.", "\n" + out)

    def test_columns_point_at_what_the_student_wrote(self) -> None:
        for compiler in ("gcc12", "clang19"):
            with self.subTest(compiler):
                # The missing ';' after the launch: just past its last character, caret and fix-it alike.
                _, original, out = cleaned(FIXTURES / f"02-missing-semicolon.{compiler}.txt")
                end = len(original.splitlines()[51]) + 1
                self.assertIn(f":52:{end}: error:", out)
                self.assertEqual([len(t) for t in out.splitlines() if t.rstrip().endswith((" ^", " ;"))],
                                 [len("      | ") + end] * 2, out)
                # A name in the launch's configuration: the name itself.
                _, original, out = cleaned(FIXTURES / f"03-undeclared-in-configuration.{compiler}.txt")
                self.assertIn(f":52:{original.splitlines()[51].index('nblocks') + 1}: error:", out)
                # A mistake in the arguments, reported inside the rewrite's lambda: the launch's kernel name.
                _, original, out = cleaned(FIXTURES / f"08-too-many-arguments.{compiler}.txt")
                column = original.splitlines()[33].index('fill_kernel') + 1
                self.assertIn(f":34:{column}: error:", out)
        # clang's range under the call in the rewrite: under the kernel's name.
        _, original, out = cleaned(FIXTURES / "01-too-few-arguments.clang19.txt")
        self.assertIn(f"      | {' ' * 8}^{'~' * (len('add_vectors') - 1)}\n", out)

    def test_the_launch_named_as_written(self) -> None:
        # g++'s context through the rewrite's lambda: the launch, without the lambda's parameters.
        _, _, out = cleaned(FIXTURES / "12-assign-to-shared-array.gcc12.txt")
        self.assertIn("required from 'the launch of matmul_tiled_kernel'\n", out)
        self.assertNotIn("auto:", out)
        # A label under a caret moved into the launch keeps its words together.
        _, _, out = cleaned(FIXTURES / "13-template-kernel-arguments-swapped.gcc12.txt")
        self.assertIn("      |         const float*\n", out)
        # clang's range under a launched template: its name and template arguments (the '>' is the rewrite's).
        _, _, out = cleaned(FIXTURES / "13-template-kernel-arguments-swapped.clang19.txt")
        self.assertIn(f"|         ^{'~' * (len('transpose_vector<T, tile, pass_rows') - 1)}\n", out)

    def test_notes_at_the_students_declarations_stay(self) -> None:
        _, _, out = cleaned(FIXTURES / "04-wrong-argument-type.clang19.txt")
        self.assertIn("no known conversion from 'int *' to 'float *' for 3rd argument", out)
        _, _, out = cleaned(FIXTURES / "01-too-few-arguments.gcc12.txt")
        self.assertIn("candidate: 'template<class T> void {anonymous}::add_vectors", out)

    def test_a_body_not_rewritten_is_left_as_the_compiler_said_it(self) -> None:
        fixture = FIXTURES / "09-undeclared-in-kernel-body.gcc12.txt"
        self.assertEqual(cleaned(fixture)[2], fixture.read_text())


LAUNCH = "    fill_kernel<<<grid, block>>>(out, rows, cols);"


class Synthetic(unittest.TestCase):
    def source(self, line: str = LAUNCH) -> tuple[str, str]:
        original = "\n" * 33 + line + "\n"
        return original, rewrite(original).text

    def test_line_map_prefix_suffix_and_middle(self) -> None:
        original, rewritten = self.source()
        m = LineMap(original.splitlines()[33], rewritten.splitlines()[33])
        self.assertEqual(m.offset(2), 2)                                        # the indentation
        self.assertEqual(m.offset(len(m.rewritten) - 2), len(m.original) - 2)  # the arguments' ")"
        self.assertEqual(m.offset(m.rewritten.index("cudacpu_args_")), 4)       # inside the rewrite: the kernel

    def test_a_tab_indented_launch_in_display_columns(self) -> None:
        original, rewritten = self.source("\t" + LAUNCH.strip())
        rewritten_line = rewritten.splitlines()[33]
        gcc_column = len(rewritten_line.expandtabs(8)) + 1
        out = clean(f"k.cu:34:{gcc_column}: error: expected ';' before '}}' token\n"
                    f"   34 | {rewritten_line.expandtabs(8)}\n      | {' ' * (gcc_column - 1)}^\n",
                    "k.cu", original, rewritten, display_columns=True)
        end = len(original.splitlines()[33].expandtabs(8)) + 1
        self.assertIn(f"k.cu:34:{end}: error:", out)
        self.assertIn(f"   34 | {original.splitlines()[33].expandtabs(8)}\n      | {' ' * (end - 1)}^", out)
        # Inside the rewrite: the kernel's name, one tab (8 columns) in.
        inside = len(rewritten_line[:rewritten_line.index("cudacpu_args_")].expandtabs(8)) + 1
        out = clean(f"k.cu:34:{inside}: error: too many arguments\n", "k.cu", original, rewritten, display_columns=True)
        self.assertEqual(out, "k.cu:34:9: error: too many arguments\n")

    def test_the_lambda_is_named_as_the_launch(self) -> None:
        original, rewritten = self.source()
        column = rewritten.splitlines()[33].index("[&]") + 1
        message = f"no matching function for call to object of type '(lambda at k.cu:34:{column})'"
        out = clean(f"k.cu:34:5: error: {message}\n", "k.cu", original, rewritten, display_columns=False)
        self.assertEqual(out, "k.cu:34:5: error: no matching function for call to object of type "
                              "'the launch of fill_kernel at k.cu:34'\n")
        out = clean("k.cu:34:5: error: use of 'fill(int*, int, int)::<lambda(auto:3& ...)>' before deduction\n",
                    "k.cu", original, rewritten, display_columns=True)
        self.assertEqual(out, "k.cu:34:5: error: use of 'the launch of fill_kernel' before deduction\n")

    def test_what_it_does_not_know_passes_through(self) -> None:
        original, rewritten = self.source()
        for text in ("ld: something odd\n", "k.cu:34:3: error: weird\nnot a quote line\n",
                     "/usr/include/x.h:1:1: error: in a header, about nothing internal\n"):
            self.assertEqual(clean(text, "k.cu", original, rewritten, display_columns=True), text)

    def test_an_error_always_remains(self) -> None:
        original, rewritten = self.source()
        text = ("/x/cudacpu/launch.h:88:9: error: no matching function for call to 'apply'\n"
                "k.cu:34:5: note: in instantiation of 'cudacpu::PendingLaunch<(lambda at k.cu:34:80)>' here\n")
        out = clean(text, "k.cu", original, rewritten, display_columns=False)
        self.assertIn("error: no matching function for call to 'apply'", out)
        self.assertNotIn("PendingLaunch", out)

    def test_an_error_in_a_header_not_reached_through_a_launch_stays(self) -> None:
        original, rewritten = self.source()
        text = ("k.cu:34:5: error: no matching function for call to 'fill_kernel'\n"
                "/x/cudacpu/atomics.h:9:1: error: static assertion failed: atomicAdd of a bool\n"
                "k.cu:20:3: note: in instantiation of 'atomicAdd<bool>' requested here\n")
        self.assertEqual(clean(text, "k.cu", original, rewritten, display_columns=False), text)


if __name__ == "__main__":
    unittest.main()
