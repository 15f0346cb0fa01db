// A launcher that could not be built from the student's file: the file did not
// compile or link, or it does not define every instantiation the harness calls
// (fallback_launchers.cpp). Its cases get the status `build_error` with this
// message; the other tasks, and the task's other element types, still run.
#pragma once

#include <stdexcept>

struct TaskUnavailable : std::logic_error {
    using std::logic_error::logic_error;
};
