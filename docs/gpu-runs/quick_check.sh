#!/usr/bin/env bash
# A quick check on a GPU before the whole suite (one short device call): the GPU build, the exact-placement,
# planted-bug and make-test GPU tests, and four submissions graded on the GPU with a small rubric: s08-fast and
# s04-race of the sample class, the planted race between blocks (dot), and a task file that defines the C
# functions of the harness's reply writer (grader/tests/test_gate_cpu.py's REPLY_PATH_FILE). What the grading
# path added in round three runs in it: the includes step, the CPU-and-GPU object gate, sealed objects,
# compute-sanitizer with exact placement and padding. Logs and a verdicts table go to $OUT.
#   usage (repository root, .deps/ and .whl/ carried as for device_run.sh): bash docs/gpu-runs/quick_check.sh
set -uo pipefail
OUT=${OUT:-$PWD/gpu-quick-logs}; mkdir -p "$OUT"
export DEPS_INCLUDE=$PWD/.deps/root/usr/include PYTHONUNBUFFERED=1
[ -x .deps/root/usr/bin/bwrap ] && export BWRAP=$PWD/.deps/root/usr/bin/bwrap
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
work=$(mktemp -d)
python3 - "$work" <<'PY'
import shutil, sys
from pathlib import Path
from grader.core.registry import Registry
from grader.core.rubric import DEFAULT_RUBRIC, load_rubric
from grader.tests.conftest import small_rubric_text
from grader.tests.test_gate_cpu import REPLY_PATH_FILE
work, data = Path(sys.argv[1]), Path("data/sample-submissions")
rubric = load_rubric(DEFAULT_RUBRIC, Registry.from_file())
(work / "rubric.toml").write_text(small_rubric_text(rubric, limits={"build": 300, "case": 20, "submission": 300}))
for name in ("s08-fast", "s04-race"):
    shutil.copytree(data / name, work / "subs" / name)
(work / "subs" / "racy-dot").mkdir(parents=True)
shutil.copy("solution/tests/planted/race/dot.cu", work / "subs" / "racy-dot" / "dot.cu")
(work / "subs" / "reply-path").mkdir()
(work / "subs" / "reply-path" / "add.cu").write_text(REPLY_PATH_FILE)
PY
t0=$SECONDS; make build > "$OUT/build.log" 2>&1; echo "build: $? in $((SECONDS - t0)) s"
t0=$SECONDS
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider solution/tests/test_exact_placement_gpu.py \
  solution/tests/test_planted_bugs.py solution/tests/test_gpu_suite.py > "$OUT/tests.log" 2>&1
echo "tests: $? in $((SECONDS - t0)) s"; tail -n 15 "$OUT/tests.log"
t0=$SECONDS
timeout 240 python3 -m grader grade "$work/subs" --rubric "$work/rubric.toml" --results "$work/results" --no-progress \
  > "$OUT/grade.log" 2>&1
echo "grade: $? in $((SECONDS - t0)) s"; tail -n 25 "$OUT/grade.log"
python3 - "$work/results/grades.sqlite" <<'PY' | tee "$OUT/verdicts.txt"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for row in con.execute("SELECT s.student, c.task, c.kind, c.status, COUNT(*) FROM cases c JOIN submissions s "
                       "ON s.id = c.submission_id GROUP BY 1, 2, 3, 4 ORDER BY 1, 2"):
    print(*row)
for row in con.execute("SELECT s.student, r.task, r.tool, r.status, r.errors, r.checker FROM sanitizer_runs r "
                       "JOIN submissions s ON s.id = r.submission_id WHERE r.status != 'clean'"):
    print("sanitizer", *row)
for row in con.execute("SELECT student, total, gate FROM submissions"):
    print("total", row[0], row[1], row[2][:300])
PY
