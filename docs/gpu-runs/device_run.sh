#!/usr/bin/env bash
# One recorded GPU run: what the device tool executes on a lent GPU machine.
# It builds everything, runs `make check` (the GPU suite included), `make demo`,
# compute-sanitizer on the solution, and times matmul_fast variants beside
# cuBLAS. Logs go to $OUT (or ./gpu-run-logs when $OUT is unset).
#
# The GPU machines reach no package index: the header libraries and bubblewrap
# come unpacked in .deps/ (apt-get download + dpkg -x) and Python wheels in .whl/.
#   usage: bash docs/gpu-runs/device_run.sh [buildtime] [check] [bench] [demo] [fairness] [sanitize] [variants]
set -uo pipefail
OUT=${OUT:-$PWD/gpu-run-logs}
mkdir -p "$OUT"
steps=${*:-buildtime check bench demo fairness sanitize variants}
export DEPS_INCLUDE=$PWD/.deps/root/usr/include PYTHONUNBUFFERED=1
[ -x .deps/root/usr/bin/bwrap ] && export BWRAP=$PWD/.deps/root/usr/bin/bwrap  # the grader's sandbox
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv > "$OUT/device.txt" 2>&1
note "device: $(tail -n1 "$OUT/device.txt")"
note "date: $(date -u +%FT%TZ)  nvcc: $(nvcc --version | tail -n1)"
note "bubblewrap: $("${BWRAP:-bwrap}" --version 2>&1)"

run() {  # run NAME COMMAND...: log to $OUT/NAME.log, note the exit status and time
  local name=$1; shift
  local t0=$SECONDS
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  note "$name: exit $rc in $((SECONDS - t0)) s"
  return $rc
}

for step in $steps; do
  case $step in
    buildtime)
      # A clean build of the harness, the student suite and the unit tests
      # against the starter stubs and against the solution, on every core.
      rm -rf starter/build
      run clean_build bash -c "make -C starter -j$(nproc) all unit-bin && make -C starter -j$(nproc) all KERNELS=../solution/kernels" ;;
    check)
      run check make check PYTEST_ARGS=-v
      grep -E "passed|failed|skipped|error" "$OUT/check.log" | tail -n 3 | tee -a "$summary"
      grep -E "(PASSED|FAILED|SKIPPED|ERROR)( |$)" "$OUT/check.log" | sed 's/ *\[ *[0-9]*%\]//' >> "$summary" ;;
    bench)
      run bench make bench
      cp results/bench.jsonl "$OUT/" 2>/dev/null
      sed -n '/^harness /,$p' "$OUT/bench.log" | tee -a "$summary" ;;
    demo)
      run demo make demo
      cp results/demo/grades.csv "$OUT/demo-grades.csv" 2>/dev/null
      (cd results/demo && tar czf "$OUT/demo-feedback.tar.gz" feedback grades.sqlite)
      tail -n 4 "$OUT/demo.log" | tee -a "$summary" ;;
    fairness)
      # The solution graded as a student: every paired speedup should be 1.
      rm -rf results/fairness && mkdir -p results/fairness/submissions
      cp -r solution/kernels results/fairness/submissions/solution-as-student
      run fairness python3 -m grader grade results/fairness/submissions --results results/fairness --no-progress
      python3 - "$summary" <<'PY'
import sqlite3, sys
rows = sqlite3.connect("results/fairness/grades.sqlite").execute(
    "SELECT task, shape, speedup, speedup_low, speedup_high, pairs, stop_reason FROM cases WHERE kind = 'timed'")
with open(sys.argv[1], "a") as out:
    for r in rows:
        line = "fairness %-13s %-15s speedup %.4f (95%% CI %.4f to %.4f) over %d pairs, %s" % r
        print(line)
        out.write(line + "\n")
PY
      ;;
    sanitize)
      run memcheck make -C starter memcheck KERNELS=../solution/kernels
      run racecheck make -C starter racecheck KERNELS=../solution/kernels
      grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log" | tee -a "$summary" ;;
    variants)
      # matmul_fast's tile configurations (solution/kernels/matmul_fast.cu,
      # VariantConfig), built in parallel, each timed beside cuBLAS in its own run.
      variants=${VARIANTS:-0 1 2 3 4 5 6 7 8 9}
      for v in $variants; do
        make -C starter -j4 harness KERNELS=../solution/kernels KTAG=fast_v$v \
          EXTRA_NVFLAGS="-DMATMUL_FAST_VARIANT=$v" > "$OUT/build_fast_v$v.log" 2>&1 &
      done
      wait
      for v in $variants; do
        (cd starter && ./build/fast_v$v/harness --task matmul_fast --budget 1 \
          --shape 2048x2048x2048,4096x4096x4096,8192x8192x8192,4095x4095x4095,4097x4097x4097,3000x5000x700) \
          > "$OUT/fast_v$v.log" 2>&1
        note "matmul_fast variant $v:"
        grep -E "limits|matmul_fast" "$OUT/fast_v$v.log" | tee -a "$summary"
      done ;;
  esac
done

# The device tool brings back only a few files: keep the summary and the demo's
# JSON apart and pack every log into one archive.
(cd "$OUT" && tar czf logs.tar.gz --remove-files ./*.log device.txt 2>/dev/null)

