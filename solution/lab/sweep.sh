#!/usr/bin/env bash
# Builds the lab's sweep and runs it on this machine's GPU (solution/lab/README.md).
#
#   solution/lab/sweep.sh --task matmul_fast --candidates auto,large/4 --shape 1024x1024x1024
#       one sweep: every option after the script's own is the sweep program's (sweep --help)
#   solution/lab/sweep.sh --plan solution/lab/matmul_fast/shapes.plan
#       one sweep per line of the plan: TASK SHAPES CANDIDATES [SWEEP OPTIONS...]
#
# Its own options, first: --out DIR keeps every sweep's table in DIR/sweep.txt and its
# rows in DIR/sweep.csv (both started afresh); --no-build runs the sweep as it was last built. Only the version-1
# configurations named (v17, v31, ...) are built, unless V1_VARIANTS says otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="" build=1 plan=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --plan) plan=$2; shift 2 ;;
    *) break ;;
  esac
done
if [ -n "$out" ]; then mkdir -p "$out" && out=$(cd "$out" && pwd) && rm -f "$out/sweep.txt" "$out/sweep.csv"; fi

lines=()
if [ -n "$plan" ]; then
  while read -r line; do
    line=${line%%#*}
    [ -n "${line// }" ] && lines+=("$line")
  done < "$plan"
fi
if [ "$build" = 1 ]; then
  # (no vNN named is no match, which must not end the script under pipefail)
  named=$(printf '%s\n' "$*" "${lines[@]:-}" | { grep -oE '(^|[ ,=])v[0-9]+' || true; } | tr -dc '0-9\n' | sort -un | tr '\n' ' ')
  make -C solution/lab -j"$(nproc)" sweep V1_VARIANTS="${V1_VARIANTS:-$named}"
fi

run() {  # run SWEEP-ARGS...: one sweep from starter/ (where the harness finds data/), its table kept in $out
  if [ -n "$out" ]; then
    (cd starter && ./build/lab/sweep --csv "$out/sweep.csv" "$@") | tee -a "$out/sweep.txt"
  else
    (cd starter && ./build/lab/sweep "$@")
  fi
}
status=0
if [ -n "$plan" ]; then
  for line in "${lines[@]}"; do
    # shellcheck disable=SC2086  # the plan's options are words
    set -- $line
    task=$1 shapes=$2 candidates=$3; shift 3
    run --task "$task" --shape "$shapes" --candidates "$candidates" "$@" || status=$?
  done
else
  run "$@" || status=$?
fi
exit $status
