#!/usr/bin/env bash
# One recorded GPU run: what the device tool executes on a lent GPU machine.
# It builds everything, runs `make check` (the GPU suite included), `make demo`,
# compute-sanitizer on the solution, and times matmul_fast variants beside
# cuBLAS. Logs go to $OUT (or ./gpu-run-logs when $OUT is unset).
#
# The GPU machines reach no package index: the header libraries come unpacked
# in .deps/ (apt-get download + dpkg -x) and Python wheels in .whl/.
#   usage: bash docs/gpu-runs/device_run.sh [check] [demo] [sanitize] [variants]
set -uo pipefail
OUT=${OUT:-$PWD/gpu-run-logs}
mkdir -p "$OUT"
steps=${*:-check demo sanitize variants}
export DEPS_INCLUDE=$PWD/.deps/root/usr/include PYTHONUNBUFFERED=1
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
    check)
      run check make check
      grep -E "passed|failed|skipped|error" "$OUT/check.log" | tail -n 3 | tee -a "$summary" ;;
    demo)
      run demo make demo
      cp results/demo.jsonl "$OUT/" 2>/dev/null
      sed -n '/^harness /,$p' "$OUT/demo.log" | tee -a "$summary" ;;
    sanitize)
      run memcheck make -C starter memcheck KERNELS=../solution/kernels
      run racecheck make -C starter racecheck KERNELS=../solution/kernels
      grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log" | tee -a "$summary" ;;
    variants)
      # matmul_fast with other pipeline depths and occupancy targets, each timed beside cuBLAS.
      for v in "4 2" "3 2" "4 1" "3 1"; do
        set -- $v
        tag="fast_s$1_b$2"
        make -C starter -j16 harness KERNELS=../solution/kernels KTAG=$tag \
          EXTRA_NVFLAGS="-DMATMUL_FAST_STAGES=$1 -DMATMUL_FAST_MIN_BLOCKS=$2" > "$OUT/build_$tag.log" 2>&1
        (cd starter && ./build/$tag/harness --task matmul_fast --budget 1 \
          --shape 2048x2048x2048,4096x4096x4096,8192x8192x8192,4097x4097x4097) > "$OUT/$tag.log" 2>&1
        note "variant stages=$1 min_blocks=$2:"
        grep -E "limits|matmul_fast" "$OUT/$tag.log" | tee -a "$summary"
      done ;;
  esac
done
