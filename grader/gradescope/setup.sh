#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image, from /autograder/source, where it unpacked
# the zip that `make gradescope` builds (setup.sh, run_autograder and the repository at its root).
#
# Gradescope's containers have no GPU: there run_autograder (`bin/grader gradescope --device auto`) grades
# correctness only, on the CPU backend (g++, no CUDA toolkit), and each student's results say that the
# performance points were not measured. The course times submissions on its own GPU machine (`make grade`,
# README.md). On a machine with a GPU and the CUDA toolkit, the same zip grades in full.
set -euo pipefail
SOURCE=${AUTOGRADER_SOURCE:-/autograder/source}  # (the tests unpack the zip elsewhere)
cd "$SOURCE"
for need in grader/requirements.txt grader/__main__.py bin/grader starter/Makefile solution/kernels run_autograder; do
  if [ ! -e "$need" ]; then
    echo "setup.sh: $SOURCE/$need is missing: the zip's root must hold the repository" \
      "(build it with make gradescope)" >&2
    exit 1
  fi
done
apt-get update -q
apt-get install -y -q make g++ python3 python3-pip python3-venv doctest-dev nlohmann-json3-dev libcli11-dev \
  bubblewrap libseccomp2
python3 -m pip install -q -r grader/requirements.txt
if ! command -v nvcc >/dev/null; then
  echo "setup.sh: note: no nvcc on PATH: this image grades correctness only, on the CPU backend;" \
    "the course times submissions on its own GPU machine (make grade)" >&2
fi
