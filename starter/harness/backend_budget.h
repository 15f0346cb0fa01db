// Which cases this build's backend runs.
//
// A GPU build runs every case. The CPU backend (starter/cpu/) runs a case only when its work fits a budget of a
// few seconds there (2 cores, AddressSanitizer on the task files): the elements of a vector or matrix, the
// multiply-adds of a matmul. Larger shapes are "GPU only": the student suite counts and lists them, and the
// harness's `--serve` answers a check of one with the status gpu_only, which the grader leaves out of a CPU
// run's score (grader/core/status.py).
#pragma once

#include <string>

#include "shape.h"

bool runs_on_this_backend(const Shape& s);

// Why a shape is not run here, in one sentence a student understands.
std::string gpu_only_message(const Shape& s);
