#!/usr/bin/env bash
# Issue 31, make profile GPU=1: which of ncu's counts give "active lanes at memory accesses" as the CPU counts it
# (lanes that take part in a warp's load or store). Profiles dot and transpose of the solution and of two planted
# performance bugs with candidate numerators and denominators; writes OUT_DIR/NAME.csv (ncu --csv --page raw).
#   bash docs/gpu-runs/ncu_lanes_probe.sh OUT_DIR
set -uo pipefail
out=${1:?usage: ncu_lanes_probe.sh OUT_DIR}
mkdir -p "$out"
metrics=smsp__sass_thread_inst_executed_op_memory_pred_on.sum,smsp__sass_inst_executed_op_ld.sum,\
smsp__sass_inst_executed_op_st.sum,smsp__sass_inst_executed_op_global_atom.sum,smsp__sass_inst_executed_op_global_red.sum,\
smsp__sass_inst_executed_op_shared_atom.sum,smsp__sass_inst_executed_op_memory_8b.sum,\
smsp__sass_inst_executed_op_memory_16b.sum,smsp__sass_inst_executed_op_memory_32b.sum,\
smsp__sass_inst_executed_op_memory_64b.sum,smsp__sass_inst_executed_op_memory_128b.sum,\
smsp__thread_inst_executed_pipe_lsu_pred_on.sum,smsp__inst_executed_pipe_lsu.sum,\
smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,\
smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum
for pair in solution:solution/kernels interleaved_reduction:solution/tests/planted_performance/interleaved_reduction \
            naive_transpose:solution/tests/planted_performance/naive_transpose; do
  name=${pair%%:*} dir=$PWD/${pair#*:}
  make -C starter -j"$(nproc)" harness KERNELS="$dir" KTAG="lanes-$name" BUILD=build/lanes > "$out/build-$name.log" 2>&1 \
    || { echo "$name: build failed"; continue; }
  for f in "$dir"/*.cu; do
    task=$(basename "$f" .cu)
    case $task in dot|transpose) ;; *) continue ;; esac
    ncu --clock-control none --csv --page raw --metrics "$metrics" starter/build/lanes/lanes-$name/harness \
      --task "$task" --dtype float32 --suite profile --check-only --check-runs 1 --fixed-placement --no-limits \
      --reference cpu --seed 1 > "$out/$name-$task.csv" 2> "$out/$name-$task.err"
    echo "$name-$task: exit $?"
  done
done
