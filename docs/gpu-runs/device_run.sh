#!/usr/bin/env bash
# One recorded GPU run: what the device tool executes on a lent GPU machine.
# It builds everything, runs `make check` (the GPU suite included), `make demo`,
# compute-sanitizer on the solution, and times matmul_fast variants beside
# cuBLAS. Logs go to $OUT (or ./gpu-run-logs when $OUT is unset).
#
# The GPU machines reach no package index: the header libraries and bubblewrap
# come unpacked in .deps/ (apt-get download + dpkg -x) and Python wheels in .whl/.
#   usage: bash docs/gpu-runs/device_run.sh [buildtime] [check] [bench] [demo] [fairness] [sanitize] [variants] [profile] [transpose_variants] [tests]
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

sweep() {  # sweep NAME MACRO "VARIANTS" PATTERN HARNESS_ARGS...: each variant of a solution kernel, built
           # in parallel with -DMACRO=n, then timed beside cuBLAS and copy in its own run of the harness
  local name=$1 macro=$2 variants=$3 pattern=$4; shift 4
  make -C starter -j"$(nproc)" lib > "$OUT/build_lib.log" 2>&1  # shared by every variant: built once, first
  for v in $variants; do
    make -C starter -j4 harness KERNELS=../solution/kernels KTAG=${name}_v$v \
      EXTRA_NVFLAGS="-D$macro=$v" > "$OUT/build_${name}_v$v.log" 2>&1 &
  done
  wait
  for v in $variants; do
    (cd starter && ./build/${name}_v$v/harness --budget 1 "$@") > "$OUT/${name}_v$v.log" 2>&1
    note "$name variant $v:"
    grep -E "$pattern" "$OUT/${name}_v$v.log" | tee -a "$summary"
  done
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
    tests)
      # One folder or file of the test suite at a time (TESTS="solution/tests grader/tests", the default):
      # make check's pytest in parts that each fit one device call; TESTS_ARGS="-m gpu" keeps only the
      # tests that need the GPU (the rest run in CI). The build comes first (make build).
      run build make build
      for t in ${TESTS:-solution/tests grader/tests}; do
        name=tests_$(echo "$t" | tr '/.' '__')
        # shellcheck disable=SC2086  # TESTS_ARGS is a list of pytest options
        run "$name" timeout "${TESTS_TIMEOUT:-540}" python3 -m pytest -ra -v --durations=15 -p no:cacheprovider ${TESTS_ARGS:-} "$t"
        grep -E "passed|failed|skipped|error" "$OUT/$name.log" | tail -n 1 | tee -a "$summary"
        grep -E "(FAILED|ERROR)( |$)" "$OUT/$name.log" | sed 's/ *\[ *[0-9]*%\]//' | head -n 40 >> "$summary"
      done ;;
    bench)
      # The solution's bench (harness table + size sweep with plots), recorded as
      # the students' reference, then the students' bench on the starter stubs.
      run bench make bench
      cp results/bench.jsonl "$OUT/" 2>/dev/null
      sed -n '/^harness /,$p' "$OUT/bench.log" | grep -v "^\[" | head -n 40 | tee -a "$summary"
      make bench-reference 2>&1 | tail -n1 | tee -a "$summary"
      run bench_student make -C starter -j"$(nproc)" bench
      mkdir -p "$OUT/bench-solution" "$OUT/bench-student"
      cp results/bench/* "$OUT/bench-solution/" 2>/dev/null
      cp starter/results/bench/* "$OUT/bench-student/" 2>/dev/null
      cp starter/bench/reference.json "$OUT/" 2>/dev/null ;;
    demo)
      run demo make demo
      cp results/demo/grades.csv "$OUT/demo-grades.csv" 2>/dev/null
      (cd results/demo && tar czf "$OUT/demo-feedback.tar.gz" feedback grades.sqlite leaderboard review.csv 2>/dev/null)
      tail -n 4 "$OUT/demo.log" | tee -a "$summary" ;;
    fairness)
      # The solution graded as a student, in FAIRNESS_RUNS separate grading runs
      # (default 5): every paired speedup should be 1; the spread across runs is
      # what a student's score can move by luck.
      rm -rf results/fairness && mkdir -p results/fairness/submissions
      cp -r solution/kernels results/fairness/submissions/solution-as-student
      for i in $(seq 1 "${FAIRNESS_RUNS:-5}"); do
        run fairness_$i python3 -m grader grade results/fairness/submissions --results results/fairness/run$i \
          --work results/fairness/work --no-progress
      done
      python3 - "$summary" <<'PY'
import glob, sqlite3, sys
import pandas as pd
cases, runs, samples = [], [], []
for db in sorted(glob.glob("results/fairness/run*/grades.sqlite")):
    con = sqlite3.connect(db)
    cases.append(pd.read_sql("SELECT c.task, c.shape, c.speedup, c.speedup_low, c.speedup_high, c.pairs, "
                             "c.stop_reason FROM cases c WHERE c.kind = 'timed'", con))
    runs.append(pd.read_sql("SELECT seconds FROM submissions", con))
    samples.append(pd.read_sql("SELECT COUNT(*) AS samples, SUM(throttled) AS throttled FROM samples", con))
cases, runs, samples = pd.concat(cases), pd.concat(runs), pd.concat(samples).sum()
spread = cases.groupby(["task", "shape"]).agg(runs=("speedup", "size"), lowest=("speedup", "min"),
                                               highest=("speedup", "max"), ci_low=("speedup_low", "min"),
                                               ci_high=("speedup_high", "max"), pairs=("pairs", "median"))
with open(sys.argv[1], "a") as out:
    for text in ("fairness: paired speedup of the solution against itself over separate grading runs",
                 spread.to_string(float_format=lambda v: f"{v:.4f}"),
                 "fairness: all speedups within [0.98, 1.02]: %s" % bool(cases.speedup.between(0.98, 1.02).all()),
                 "fairness: seconds to grade the whole submission per run: "
                 + ", ".join(f"{v:.1f}" for v in runs.seconds),
                 "fairness: samples %d, taken while throttled %d" % (samples.samples, samples.throttled)):
        print(text)
        out.write(text + "\n")
PY
      ;;
    sanitize)
      run memcheck make -C starter memcheck KERNELS=../solution/kernels
      run racecheck make -C starter racecheck KERNELS=../solution/kernels
      grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log" | tee -a "$summary" ;;
    variants)
      # matmul_fast's tile configurations (solution/kernels/matmul_fast.cu, VariantConfig).
      sweep fast MATMUL_FAST_VARIANT "${VARIANTS:-31 33 34 35 36 17}" "limits|matmul_fast" --task matmul_fast \
        --shape 2048x2048x2048,4096x4096x4096,8192x8192x8192,4095x4095x4095,4097x4097x4097,3000x5000x700,1025x1025x1025,2049x2049x2049 ;;
    profile)
      # Where matmul_fast's cycles go, beside cuBLAS's SGEMM in the same harness run: issue-slot use,
      # warp stall reasons, occupancy (Nsight Compute; clocks left alone, as the device notes ask).
      # PROFILE_VARIANT picks the configuration (default: the solution's own).
      v=${PROFILE_VARIANT:-default}
      flags=""; [ "$v" != default ] && flags="-DMATMUL_FAST_VARIANT=$v"
      make -C starter -j"$(nproc)" harness KERNELS=../solution/kernels KTAG=profile_$v EXTRA_NVFLAGS="$flags" \
        > "$OUT/build_profile_$v.log" 2>&1
      for kernel in 'matmul_fast_(kmajor_)?kernel' gemm; do  # ours (either kernel); cuBLAS's (its name holds "gemm")
        label=${kernel%%_(*}
        (cd starter && ncu --clock-control none --kernel-name "regex:$kernel" --launch-count 1 \
          --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
          --section LaunchStats --section InstructionStats \
          "./build/profile_$v/harness" --task matmul_fast --shape 4096x4096x4096 --budget 0.05) \
          > "$OUT/profile_${v}_$label.log" 2>&1
        note "profile $v $label: exit $?"
        grep -E "^  [A-Za-z]|Issue Slots|Issued Warp|No Eligible|Eligible Warps|Active Warps|Warp Cycles|Achieved Occ|Registers|Duration|SM Busy|Compute \(SM\)" \
          "$OUT/profile_${v}_$label.log" | head -n 40 | sed "s/^/[$label] /" | tee -a "$summary"
      done ;;
    transpose_variants)
      # transpose's versions (solution/kernels/transpose.cu, kVariants), beside the other memory-bound tasks.
      sweep transpose TRANSPOSE_VARIANT "${TRANSPOSE_VARIANTS:-0 1 2 3 4 5}" "limits|transpose|copy" \
        --task transpose,fill,add,dot ;;
  esac
done

# The device tool brings back only a few files: keep the summary and the demo's
# JSON apart and pack every log into one archive.
(cd "$OUT" && tar czf logs.tar.gz --remove-files ./*.log device.txt 2>/dev/null)

