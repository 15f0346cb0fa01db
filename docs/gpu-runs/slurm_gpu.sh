#!/usr/bin/env bash
# Issue 16's GPU record: the sample class graded through a one-node Slurm on this machine's GPU, compared with
# `make demo` (same status for every submission, same verdict for every case, same correctness points).
#
# The GPU machines reach no package index, so Slurm comes as Debian's packages, fetched on a machine that has
# one and carried in .deps/debs (as bubblewrap is):
#     cd .deps/debs && apt-get download slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge libmunge2 \
#         libhwloc15 libnuma1 libjson-c5 liblua5.1-0 libyaml-0-2 libreadline8 liblz4-1 libdbus-1-3
# (libdbus-1-3: slurmd always loads its cgroup/v2 plugin, which links it; without systemd that plugin also needs
# /sys/fs/cgroup/system.slice, which slurm_gpu.py makes: docs/gpu-runs/2026-11-24-h100-slurm.md)
# This script unpacks them into .deps/slurm (dpkg -x, or ar + tar where dpkg is missing; nothing is installed),
# and docs/gpu-runs/slurm_gpu.py starts slurmctld, slurmd and munged from there, as root, in a folder of their
# own, with this machine's /dev/nvidiaN as the node's GPUs; it stops them when it is done.
#
#   usage (as root, from the repository): bash docs/gpu-runs/slurm_gpu.sh
#   or as a step of the recorded run:      bash docs/gpu-runs/device_run.sh demo slurm
# Logs and the record (slurm_gpu.txt) go to $OUT/slurm (default ./gpu-run-logs/slurm).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-run-logs}
mkdir -p "$OUT/slurm"
PACKAGES="slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge libmunge2 libhwloc15 libnuma1 libjson-c5
          liblua5.1-0 libyaml-0-2 libreadline8 liblz4-1 libdbus-1-3"
TREE=$PWD/.deps/slurm

unpack() {  # unpack DEB FOLDER: the package's files, without installing it
  if command -v dpkg > /dev/null; then
    dpkg -x "$1" "$2"
  else
    local data
    data=$(ar t "$1" | grep '^data\.tar') || return 1
    ar p "$1" "$data" | case $data in *.xz) xz -dc ;; *.zst) zstd -dc ;; *.gz) gzip -dc ;; *) cat ;; esac \
      | tar -x -C "$2"
  fi
}

if [ ! -x "$TREE/usr/sbin/slurmctld-wlm" ]; then
  mkdir -p "$TREE"
  for p in $PACKAGES; do
    debs=(.deps/debs/"${p}"_*.deb)
    deb=${debs[0]}
    if [ ! -f "$deb" ]; then
      echo "slurm_gpu: .deps/debs has no ${p}_*.deb (fetch the packages as this script's header says)" >&2
      exit 1
    fi
    unpack "$deb" "$TREE" || { echo "slurm_gpu: could not unpack $deb" >&2; exit 1; }
  done
fi
# What slurmd's cgroup plugin will find (slurm_gpu.py prepares a cgroup v2 tree without systemd first).
{ echo "/proc/self/cgroup: $(cat /proc/self/cgroup)"; stat -fc "/sys/fs/cgroup: %T" /sys/fs/cgroup
  for f in cgroup.controllers cgroup.subtree_control; do echo "$f: $(cat /sys/fs/cgroup/$f 2>&1)"; done
  echo "processes in the root cgroup: $(wc -w < /sys/fs/cgroup/cgroup.procs 2>&1)"; ls /sys/fs/cgroup; } \
  > "$OUT/slurm/cgroup-before.txt" 2>&1
export GRADER_SLURM_TREE=$TREE PYTHONUNBUFFERED=1
[ -z "${DEPS_INCLUDE:-}" ] && [ -d .deps/root/usr/include ] && export DEPS_INCLUDE=$PWD/.deps/root/usr/include
[ -z "${BWRAP:-}" ] && [ -x .deps/root/usr/bin/bwrap ] && export BWRAP=$PWD/.deps/root/usr/bin/bwrap
# shellcheck disable=SC2086  # SLURM_GPU_ARGS is a list of options (e.g. --device simulated for a test run)
exec python3 docs/gpu-runs/slurm_gpu.py --out "$OUT/slurm" ${SLURM_GPU_ARGS:-}
