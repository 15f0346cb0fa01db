// The harness's list of tasks, in the order students meet them: the one list
// that the registry (registry.cpp: which tasks exist, and in what order) and the
// fallback launchers (fallback_launchers.cpp: the stand-in for a launcher a
// student's file does not provide) both expand. Adding a task: docs/adding-a-task.md.
//
// Each entry names the task's id, which is also its file's stem (kernels/<id>.cu)
// and its registry factory's name (Task make_<id>_task(), in harness/tasks/), and
// the parameter types of its launcher, written once here:
//   PLAIN(id, (parameter types))
//       a launcher `void id(parameter types)`;
//   TEMPLATED(id, TYPES, INSTANTIATE, (parameter types in T))
//       a launcher `template <typename T> void id(...)`, compiled for the element
//       types of tasks.h's TYPES list by the student's `TYPES(INSTANTIATE)` line.
// The student reads the same launcher, with parameter names, in
// starter/include/tasks.h; fallback_launchers.cpp refuses to compile if the two
// differ, naming the task.
#pragma once

#include <cstdint>

#include "tasks.h"

#define HARNESS_TASKS(PLAIN, TEMPLATED)                                                                      \
    PLAIN(fill, (std::int32_t*, int, int))                                                                   \
    TEMPLATED(add, ADD_TYPES, INSTANTIATE_ADD, (const T*, const T*, T*, int, int))                           \
    TEMPLATED(transpose, TRANSPOSE_TYPES, INSTANTIATE_TRANSPOSE, (const T*, T*, int, int))                   \
    TEMPLATED(matmul_naive, MATMUL_TYPES, INSTANTIATE_MATMUL_NAIVE, (const T*, const T*, T*, int, int, int)) \
    TEMPLATED(matmul_tiled, MATMUL_TYPES, INSTANTIATE_MATMUL_TILED, (const T*, const T*, T*, int, int, int)) \
    PLAIN(matmul_fast, (const float*, const float*, float*, int, int, int))                                  \
    PLAIN(dot, (const float*, const float*, float*, int))

