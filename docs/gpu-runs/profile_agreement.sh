#!/usr/bin/env bash
# Issue 31: Nsight Compute's counters for the launches the CPU backend's
# performance counters are checked against (solution/tests/profile_agreement.py
# compares them). Run on a GPU machine from the repository root:
#   bash docs/gpu-runs/profile_agreement.sh OUT_DIR
# Writes OUT_DIR/query-metrics.txt, OUT_DIR/metrics.txt (the metrics this ncu
# knows, of those asked for), one CSV per run (ncu --csv --page raw) and
# OUT_DIR/runs.txt (what each CSV is).
set -uo pipefail
out=${1:?usage: profile_agreement.sh OUT_DIR}
mkdir -p "$out"
root=$PWD
ncu --version > "$out/ncu-version.txt" 2>&1
ncu --query-metrics > "$out/query-metrics.txt" 2>&1
wanted=(
  l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
  l1tex__t_requests_pipe_lsu_mem_global_op_st.sum l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
  l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum l1tex__t_requests_pipe_lsu_mem_global_op_red.sum
  l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum
  smsp__sass_inst_executed_op_global_ld.sum smsp__sass_inst_executed_op_global_st.sum
  smsp__sass_thread_inst_executed_op_global_ld.sum smsp__sass_thread_inst_executed_op_global_st.sum
  smsp__sass_inst_executed_op_shared_ld.sum smsp__sass_inst_executed_op_shared_st.sum
  smsp__sass_thread_inst_executed_op_shared_ld.sum smsp__sass_thread_inst_executed_op_shared_st.sum
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  smsp__thread_inst_executed_per_inst_executed.ratio
  launch__registers_per_thread launch__shared_mem_per_block_static launch__block_size launch__grid_size
  launch__occupancy_limit_registers launch__occupancy_limit_shared_mem launch__occupancy_limit_warps
  launch__occupancy_limit_blocks sm__maximum_warps_per_active_cycle_pct
)
metrics=()
for m in "${wanted[@]}"; do
  if grep -q "^${m%.*} " "$out/query-metrics.txt"; then metrics+=("$m"); else echo "not on this ncu: $m" >> "$out/metrics.txt"; fi
done
list=$(IFS=,; echo "${metrics[*]}")
echo "asked: $list" >> "$out/metrics.txt"
: > "$out/runs.txt"

profile() {  # profile NAME COMMAND...: ncu's raw page for every kernel COMMAND launches
  local name=$1; shift
  ncu --clock-control none --csv --page raw --section LaunchStats --section Occupancy --metrics "$list" "$@" \
    > "$out/$name.csv" 2> "$out/$name.err"
  echo "$name exit $? : $*" >> "$out/runs.txt"
}

# The access patterns with known counts.
nvcc -O3 -lineinfo -arch=sm_90 -Istarter/include starter/cpu/tests/profile/patterns.cu -o "$out/patterns" \
  > "$out/patterns-build.log" 2>&1
profile patterns "$out/patterns"

# Submissions: the solution, two sample submissions, planted bugs and the transpose lab's versions, each
# task at its profile shape.
declare -A corpus=(
  [solution]=solution/kernels [s02]=data/sample-submissions/s02-naive-only [s08]=data/sample-submissions/s08-fast
)
for p in inverted_indexing swapped_indices missing_syncthreads load_guarded_on_k_only block_row_per_matrix_row \
         missing_bounds_check race; do
  corpus[$p]=solution/tests/planted/$p
done
# The transpose lab's versions, each as a task folder (the same files the CPU side builds).
while read -r name folder; do corpus[$name]=$folder; done < <(python3 solution/tests/profile_agreement.py lab-files /tmp/lab-files)
for name in "${!corpus[@]}"; do
  dir=${corpus[$name]}
  case $dir in /*) ;; *) dir=$root/$dir ;; esac
  make -C starter -j"$(nproc)" harness KERNELS="$dir" KTAG="prof-$name" BUILD=build/prof \
    > "$out/build-$name.log" 2>&1 || { echo "$name build failed" >> "$out/runs.txt"; continue; }
  for f in "$dir"/*.cu; do
    task=$(basename "$f" .cu)
    case $task in fill) dtype=int32 ;; matmul_fast) continue ;; *) dtype=float32 ;; esac
    profile "$name-$task" starter/build/prof/prof-$name/harness --task "$task" --dtype "$dtype" --suite profile \
      --check-only --check-runs 1 --fixed-placement --no-limits --reference cpu --seed 1
  done
done
