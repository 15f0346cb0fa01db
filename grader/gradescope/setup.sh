#!/usr/bin/env bash
# Gradescope runs this once when it builds the autograder image. The image needs
# the CUDA toolkit and an NVIDIA GPU at grading time (a GPU-enabled runner).
set -euo pipefail
apt-get update -q
apt-get install -y -q make python3 python3-pip python3-venv doctest-dev nlohmann-json3-dev libcli11-dev bubblewrap
cd /autograder/source
python3 -m pip install -q -r grader/requirements.txt
