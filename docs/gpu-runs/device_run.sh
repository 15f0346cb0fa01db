#!/usr/bin/env bash
# One recorded GPU run: what the device tool executes on a lent GPU machine.
# It builds everything, runs `make check` (the GPU suite included), `make demo`,
# compute-sanitizer on the solution, and times matmul_fast variants beside
# cuBLAS. Logs go to $OUT (or ./gpu-run-logs when $OUT is unset).
#
# The GPU machines reach no package index: the header libraries and bubblewrap
# come unpacked in .deps/ (apt-get download + dpkg -x) and Python wheels in .whl/.
#   usage: bash docs/gpu-runs/device_run.sh [buildtime] [check] [bench] [demo] [fairness] [sanitize] [variants] [profile] [ncu_probe] [ncu_lanes] [profile_gpu] [profile_agreement] [transpose_variants] [tests] [gpu_suite] [canvas_class] [slurm] [cpu_vs_gpu] [service] [verdicts] [pages] [service_bench] [rush_start] [rush_wait]
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
    gpu_suite)
      # The whole GPU suite in one pytest session and one device call: every submission the GPU tests
      # ask about is graded once, in the graded corpus (grader/tests/gpu_corpus.py: a fast-rubric run,
      # then a small real-rubric one, on one build tree, the gpu_work fixture); the tests query its
      # stores, and the summary at the end of the log gives each grading run's time. GPU_SUITE_PATHS
      # still picks folders or files (e.g. solution/tests alone); GPU_SUITE_CACHE=DIR keeps the grader's
      # build tree in DIR, named by the content hash of its sources, for a later call on the same warm
      # machine (e.g. GPU_SUITE_CACHE=$PWD/.gpu-suite-cache, an ignored folder).
      run build make build
      # Each line of the log starts with the seconds since the start: a call cut by its time limit still
      # says how long each test took.
      # shellcheck disable=SC2086  # TESTS_ARGS and GPU_SUITE_PATHS are lists
      run gpu_suite bash -c "set -o pipefail; timeout ${TESTS_TIMEOUT:-540} python3 -m pytest -m gpu -ra -v \
        --durations=30 -p no:cacheprovider ${TESTS_ARGS:-} ${GPU_SUITE_PATHS:-solution/tests grader/tests} 2>&1 \
        | python3 -c 'import sys, time
t = time.monotonic()
for line in sys.stdin: print(f\"{time.monotonic() - t:5.0f} {line}\", end=\"\", flush=True)'"
      grep -E "passed|failed|skipped|error" "$OUT/gpu_suite.log" | tail -n 1 | tee -a "$summary"
      grep -E "(FAILED|ERROR)( |$)" "$OUT/gpu_suite.log" | sed 's/ *\[ *[0-9]*%\]//' | head -n 60 >> "$summary"
      sed -n '/slowest 30 durations/,/^ *[0-9]* =/p' "$OUT/gpu_suite.log" >> "$summary"
      sed -n "/graded corpus runs/,/^ *[0-9]* =/p" "$OUT/gpu_suite.log" | tee -a "$summary" ;;
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
    canvas_class)
      # A grading week on the GPU: the sample class as a Canvas bulk download (login_LATE_userid_subid_*.tar.gz,
      # every file inside dated a week early; grader/tests/canvas_class.py), graded with --from canvas and
      # Canvas's own submission times (--lms-times submission-times.csv, around the due date), a rubric
      # with [late] (10%/day, cap 50%, one late day, an extension) and Canvas's gradebook as the roster
      # (one student without a submission); then one student regraded, a TA's override, a rescore, and the
      # Canvas import file with the assignment's id.
      cc=results/canvas_class
      rm -rf "$cc" && python3 -m grader.tests.canvas_class "$cc/input" > "$OUT/canvas_class_input.txt" 2>&1
      common=(--rubric "$cc/input/rubric.toml")
      canvas=(--from canvas --lms-times "$cc/input/submission-times.csv")
      run canvas_class_grade python3 -m grader grade "$cc/input/download" "${canvas[@]}" "${common[@]}" \
        --roster "$cc/input/roster.csv" --results "$cc/results" --no-progress
      run canvas_class_regrade_one python3 -m grader grade "$cc/input/download" "${canvas[@]}" "${common[@]}" \
        --roster "$cc/input/roster.csv" --results "$cc/results" --no-progress --student s08fast
      run canvas_class_override python3 -m grader override s03tiled matmul_tiled 5 --reason "k guard: partial credit" \
        --by "device_run canvas_class" --results "$cc/results" "${common[@]}"
      run canvas_class_rescore python3 -m grader rescore "$cc/results" "${common[@]}"
      run canvas_class_export python3 -m grader export --results "$cc/results" "${common[@]}" \
        --roster "$cc/input/roster.csv" --assignment-id 5123
      cp "$cc/results/grades.csv" "$OUT/canvas_class-grades.csv" 2>/dev/null
      cp "$cc/results/canvas.csv" "$OUT/canvas_class-canvas.csv" 2>/dev/null
      (cd "$cc/results" && tar czf "$OUT/canvas_class-results.tar.gz" feedback grades.sqlite review.csv 2>/dev/null)
      tail -n 14 "$OUT/canvas_class_grade.log" | tee -a "$summary"
      cut -d, -f1-7 "$OUT/canvas_class-grades.csv" | tee -a "$summary" ;;
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
      # matmul_fast's candidates from solution/lab/ (auto: the shipped dispatch; large/4: one tile class
      # with k in 4 pieces; v31: version 1's VariantConfig<31>; sweep --list names them all), each timed
      # beside cuBLAS at the same shape in one run. PLAN=file runs a sweep plan instead
      # (solution/lab/matmul_fast/shapes.plan).
      if [ -n "${PLAN:-}" ]; then
        run variants solution/lab/sweep.sh --out "$OUT/variants" --plan "$PLAN"
      else
        run variants solution/lab/sweep.sh --out "$OUT/variants" --task matmul_fast \
          --candidates "${CANDIDATES:-auto,large/1,v31}" \
          --shape "${SHAPES:-1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4095x4095x4095,4097x4097x4097,3000x5000x700}"
      fi
      grep -E "^(device|[0-9]+x)" "$OUT/variants/sweep.txt" | tee -a "$summary" ;;
    profile)
      # Where matmul_fast's cycles go, beside cuBLAS's SGEMM in the same sweep run: issue-slot use,
      # warp stall reasons, occupancy (Nsight Compute; clocks left alone, as the device notes ask).
      # PROFILE_CANDIDATE picks the lab candidate (default auto: the shipped dispatch), PROFILE_SHAPE the shape.
      cand=${PROFILE_CANDIDATE:-auto} shape=${PROFILE_SHAPE:-4096x4096x4096}
      label=$(echo "$cand" | tr '/' '-')
      solution/lab/sweep.sh --candidates "$cand" --shape 64x64x64 --samples 1 --rounds 1 > "$OUT/build_profile.log" 2>&1
      # ours (either kernel, version 1's too); cuBLAS's SGEMM (not the float64 reference's DGEMM)
      for kernel in 'matmul_fast_(kmajor_)?kernel' 'sgemm|gemm.*ffma'; do
        who=$([ "$kernel" = 'sgemm|gemm.*ffma' ] && echo cublas || echo "$label")
        (cd starter && ncu --clock-control none --kernel-name "regex:$kernel" --launch-count 1 \
          --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
          --section LaunchStats --section InstructionStats \
          ./build/lab/sweep --task matmul_fast --candidates "$cand" --shape "$shape" --samples 1 --rounds 1) \
          > "$OUT/profile_${label}_$who.log" 2>&1
        note "profile $cand $shape $who: exit $?"
        grep -E "^  [A-Za-z]|Issue Slots|Issued Warp|No Eligible|Eligible Warps|Active Warps|Warp Cycles|Achieved Occ|Registers|Duration|SM Busy|Compute \(SM\)|Grid Size|Block Size" \
          "$OUT/profile_${label}_$who.log" | head -n 40 | sed "s/^/[$who] /" | tee -a "$summary"
      done ;;
    ncu_probe)
      # Issue 31's make profile GPU=1: can ncu count inside the grader's sandbox, as which uid, under which
      # seccomp profile (ncu_sandbox_probe.py says the five ways); and which ideal-sector metrics this ncu has.
      make -C starter -j"$(nproc)" harness KERNELS="$PWD/solution/kernels" KTAG=probe BUILD=build/probe \
        > "$OUT/ncu_probe_build.log" 2>&1
      ncu --query-metrics > "$OUT/ncu_query_metrics.txt" 2>&1
      grep -iE "ideal|sectors_mem_global" "$OUT/ncu_query_metrics.txt" | tee -a "$summary"
      run ncu_probe python3 docs/gpu-runs/ncu_sandbox_probe.py starter/build/probe/probe/harness "$OUT/ncu_probe"
      cat "$OUT/ncu_probe.log" | tee -a "$summary" ;;
    profile_gpu)
      # Issue 31's make profile GPU=1 through the service on this GPU (grader/tests/test_service_profile_gpu.py):
      # the solution and three planted performance bugs through the client, and make profile GPU=1 itself; each
      # client's output and each job's JSON kept in $OUT/profile_gpu.
      export PROFILE_GPU_OUT=$OUT/profile_gpu
      run profile_gpu timeout "${TESTS_TIMEOUT:-540}" python3 -m pytest -m gpu -ra -v -p no:cacheprovider \
        grader/tests/test_service_profile_gpu.py
      grep -E "passed|failed|skipped|error" "$OUT/profile_gpu.log" | tail -n 1 | tee -a "$summary" ;;
    ncu_lanes)
      # Issue 31: ncu's candidate counts for active lanes at memory accesses (ncu_lanes_probe.sh).
      run ncu_lanes bash docs/gpu-runs/ncu_lanes_probe.sh "$OUT/ncu_lanes"
      tar czf "$OUT/ncu_lanes.tgz" -C "$OUT" ncu_lanes && rm -rf "$OUT/ncu_lanes"
      cat "$OUT/ncu_lanes.log" | tee -a "$summary" ;;
    profile_agreement)
      # Issue 31: Nsight Compute's counters for the launches the CPU's performance counters are checked
      # against (profile_agreement.sh says which); packed into one archive.
      run profile_agreement bash docs/gpu-runs/profile_agreement.sh /tmp/profile_agreement
      tar czf "$OUT/profile_agreement.tgz" -C /tmp profile_agreement
      cat /tmp/profile_agreement/runs.txt /tmp/profile_agreement/metrics.txt | tee -a "$summary" ;;
    transpose_variants)
      # transpose's versions from solution/lab/transpose/ (t2 is the shipped one), each beside a
      # device copy of the same bytes in one run.
      run transpose_variants solution/lab/sweep.sh --out "$OUT/transpose_variants" --task transpose \
        --candidates "${TRANSPOSE_VARIANTS:-t0,t1,t2,t3,t4,t5}" --shape "${TRANSPOSE_SHAPES:-8192x8192,4096x4096}"
      grep -E "^(device|[0-9]+x)" "$OUT/transpose_variants/sweep.txt" | tee -a "$summary" ;;
    slurm)
      # Issue 16: the sample class through a one-node Slurm (Debian's debs from .deps/debs, unpacked into
      # .deps/slurm) on this GPU, compared with `make demo`'s results/demo (run the demo step first, or the
      # script grades the class without Slurm itself). The record is $OUT/slurm/slurm_gpu.txt.
      run slurm bash docs/gpu-runs/slurm_gpu.sh
      grep -E "^(slurm:|batch |array and merge|SAME|DIFFERENT|Slurm did not|grade --slurm failed)" \
        "$OUT/slurm/slurm_gpu.txt" | tee -a "$summary"
      cp "$OUT/slurm/slurm_gpu.txt" "$OUT/slurm_gpu.txt" 2>/dev/null
      (cd "$OUT" && tar czf slurm.tar.gz --remove-files slurm 2>/dev/null) ;;
    cpu_vs_gpu)
      # The same kernels on both backends: the student suite (SANITIZE=0: compute-sanitizer is the
      # GPU's alone) on the GPU and with CPU=1, on the solution and on each planted bug (its own task),
      # one verdict per task; the two tables and their diff. The CPU lists shapes beyond its budget as
      # GPU only and a file it cannot run as "needs a GPU": both appear in the diff, on purpose.
      verdicts() {  # verdicts BACKEND LABEL LOG: "label task verdict" per task line of make test
        grep -E "^(fill|add|transpose|matmul_naive|matmul_tiled|matmul_fast|dot) +(pass|FAIL|not implemented|needs a GPU)" "$3" \
          | sed -E 's/^([a-z_]+) +(pass|FAIL|not implemented yet|needs a GPU).*/\1 \2/' | sed "s/^/$2 /"
      }
      for backend in gpu cpu; do
        cpuflag=$([ "$backend" = cpu ] && echo CPU=1 || echo CPU=0)
        table="$OUT/verdicts_$backend.txt"; : > "$table"
        run "cpu_vs_gpu_${backend}_solution" make -C starter test $cpuflag SANITIZE=0 KERNELS=../solution/kernels KTAG=solution
        verdicts "$backend" solution "$OUT/cpu_vs_gpu_${backend}_solution.log" >> "$table"
        # Each variant links the solution's objects (copied with their times) and compiles its one
        # file; the variants run side by side, ${CPU_VS_GPU_JOBS:-4} at once.
        objdir=starter/build/$([ "$backend" = cpu ] && echo on-cpu/)solution/kernels
        for dir in solution/tests/planted/*/; do
          name=$(basename "$dir"); file=$(ls "$dir"*.cu | head -n1); task=$(basename "$file" .cu)
          kernels=$PWD/.cpu_vs_gpu/$name/kernels; rm -rf "$kernels"; mkdir -p "$kernels"
          for f in solution/kernels/*.cu; do [ "$(basename "$f")" = "$task.cu" ] || ln -s "$PWD/$f" "$kernels/"; done
          cp "$file" "$kernels/"
          objects=starter/build/$([ "$backend" = cpu ] && echo on-cpu/)planted_$name/kernels
          rm -rf "$objects"; mkdir -p "$objects"
          for o in "$objdir"/*.o; do [ "$(basename "$o")" = "$task.o" ] || cp -p "$o" "$objects/"; done
          while [ "$(jobs -r | wc -l)" -ge "${CPU_VS_GPU_JOBS:-4}" ]; do sleep 1; done
          run "cpu_vs_gpu_${backend}_$name" timeout 900 make -C starter test $cpuflag SANITIZE=0 KERNELS="$kernels" \
            KTAG="planted_$name" TASK="$task" -j2 &
        done
        wait
        for dir in solution/tests/planted/*/; do
          name=$(basename "$dir")
          verdicts "$backend" "$name" "$OUT/cpu_vs_gpu_${backend}_$name.log" >> "$table"
        done
      done
      diff "$OUT/verdicts_gpu.txt" "$OUT/verdicts_cpu.txt" > "$OUT/verdicts.diff"
      note "cpu_vs_gpu: $(wc -l < "$OUT/verdicts_gpu.txt") verdicts on the GPU, $(wc -l < "$OUT/verdicts_cpu.txt") on the CPU, $(grep -c '^[<>]' "$OUT/verdicts.diff") diff lines"
      cat "$OUT/verdicts.diff" | tee -a "$summary"
      grep -h "the suite ran on the CPU in" "$OUT"/cpu_vs_gpu_cpu_solution.log | tee -a "$summary" ;;
    service)
      # Issue 29: the sample class through the grading service on this machine's GPUs (SERVICE_GPUS, default 0),
      # half through the students' client, half through the Gradescope bridge, against `grade`'s verdicts.
      run service_gpu bash -c "SERVICE_GPUS=${SERVICE_GPUS:-0} timeout ${TESTS_TIMEOUT:-540} python3 -m pytest \
        grader/tests/test_service_gpu.py -m gpu -s -v -p no:cacheprovider"
      grep -E "passed|failed|skipped|error" "$OUT/service_gpu.log" | tail -n 1 | tee -a "$summary"
      grep -E "^grade: |^s0[0-9]-" "$OUT/service_gpu.log" | tee -a "$summary" ;;
    verdicts)
      # Issue 42 item 5: the classes COMPARE_CLASSES names (sample canvas hostile; default sample canvas) graded by
      # the tree before a restructuring (BEFORE_TREE, default .deps/before: `git archive` of it, carried) and by
      # this one (or AFTER_TREE, e.g. .deps/after: `git archive` of a commit), every verdict compared
      # (docs/gpu-runs/verdict_compare.py); COMPARE_FAST=1 grades with the GPU suite's fast rubric (gpu_corpus.py
      # of the after tree) in place of each tree's own. Stores in /tmp/verdicts, logs to $OUT.
      # COMPARE_SIDE=before|after grades with that tree alone (a class too slow for both in one call) and brings
      # its results back as $OUT/verdicts-<side>.tar.gz (per class: <class>-<side>/ with grades.sqlite,
      # <class>-<side>.out and .json); `verdict_compare.py compare` compares two such folders afterwards.
      if [ "${COMPARE_FAST:-0}" = 1 ]; then
        (cd "${AFTER_TREE:-.}" && PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} python3 -c \
          "from grader.tests.gpu_corpus import fast_rubric_text as f; open('/tmp/fast.toml', 'w').write(f())")
        export COMPARE_GRADE_ARGS="--rubric /tmp/fast.toml"
      fi
      # shellcheck disable=SC2086  # COMPARE_CLASSES is a list
      run verdicts timeout "${TESTS_TIMEOUT:-540}" python3 docs/gpu-runs/verdict_compare.py "${BEFORE_TREE:-.deps/before}" \
        /tmp/verdicts ${COMPARE_CLASSES:-sample canvas}
      mkdir -p "$OUT/verdicts" && cp /tmp/verdicts/*.out "$OUT/verdicts/" 2>/dev/null
      if [ -n "${COMPARE_SIDE:-}" ]; then
        (cd /tmp/verdicts && for c in ${COMPARE_CLASSES:-sample canvas}; do ls -d "$c-$COMPARE_SIDE" "$c-$COMPARE_SIDE.out" \
          "$c-$COMPARE_SIDE.json" 2>/dev/null; done | tar czf "$OUT/verdicts-$COMPARE_SIDE.tar.gz" -T -)
        note "verdicts-$COMPARE_SIDE.tar.gz: $(du -k "$OUT/verdicts-$COMPARE_SIDE.tar.gz" | cut -f1) KiB"
      fi
      grep -E "^DIFF|^INPUT|verdicts \(" "$OUT/verdicts.log" | tee -a "$summary" ;;
    pages)
      # Issue 30: the service's pages after two sample students' uploads on GPU 0, saved for their screenshots.
      run pages timeout "${PAGES_TIMEOUT:-400}" python3 -m grader.tests.capture_pages --device gpu --gpus 0 \
        --out "$OUT/pages" ${PAGES_STUDENTS:-s08-fast s03-tiled-off-by-one}
      tail -n 4 "$OUT/pages.log" | tee -a "$summary" ;;
    service_bench)
      # Issue 29's targets: a rush of BENCH_STUDENTS solutions-as-students on 1 and then 2 GPUs (BENCH_GPUS),
      # then uploads one at a time on the idle service (grader/service/bench.py says what each number is).
      run service_bench timeout "${BENCH_TIMEOUT:-560}" python3 -m grader.service.bench --device gpu \
        --gpus "${BENCH_GPUS:-1,2}" --students "${BENCH_STUDENTS:-10}" --single "${BENCH_SINGLE:-3}" \
        --work /tmp/service-bench-work --out "$OUT/service-bench.json" ${BENCH_ARGS:-}
      tail -n 30 "$OUT/service_bench.log" | tee -a "$summary" ;;
    rush_start)
      # Issue 43's rush of 60 outlasts one device call (10 minutes): started here in a session of its own, it goes on
      # after this call while the next calls (rush_wait) follow within the machine's idle limit. /tmp/rush keeps it.
      rm -rf /tmp/rush && mkdir -p /tmp/rush
      setsid nohup bash -c "timeout ${BENCH_TIMEOUT:-1500} python3 -m grader.service.bench --device gpu --gpus 1 \
        --students ${BENCH_STUDENTS:-60} --single 3 --reuploads 3 --window 30 --again 0 \
        --work /tmp/service-bench-work --out /tmp/rush/service-bench.json > /tmp/rush/bench.log 2>&1; \
        echo \$? > /tmp/rush/rc" < /dev/null > /dev/null 2>&1 &
      note "rush_start: the bench started at $(date -u +%T)" ;;
    rush_wait)
      # Waits for rush_start's bench up to RUSH_WAIT seconds; once it is done its files come back in $OUT/rush/.
      for _ in $(seq "${RUSH_WAIT:-560}"); do [ -f /tmp/rush/rc ] && break; sleep 1; done
      if [ -f /tmp/rush/rc ]; then
        mkdir -p "$OUT/rush" && cp /tmp/rush/* "$OUT/rush/"
        note "rush: exit $(cat /tmp/rush/rc)"; tail -n 30 /tmp/rush/bench.log | tee -a "$summary"
      else
        note "rush: still running at $(date -u +%T)"; tail -n 5 /tmp/rush/bench.log | tee -a "$summary"
      fi ;;
  esac
done

# The device tool brings back only a few files: keep the summary and the demo's
# JSON apart and pack every log into one archive.
(cd "$OUT" && tar czf logs.tar.gz --remove-files ./*.log device.txt 2>/dev/null)

