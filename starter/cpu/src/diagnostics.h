// Reports: the last diagnostic, printed once, and the hooks that turn a
// fault inside a kernel (an AddressSanitizer report, a segmentation fault, a
// stack overflow, a launch that runs too long) into a message that names the
// kernel, the CUDA thread, the array and the student's file:line.
#pragma once

#include <cstddef>
#include <string>

namespace cudacpu {

// Stores `message` as cudacpu_last_diagnostic() and prints it to stderr
// (prefixed "cudacpu: ") unless the program asked for quiet.
void report_diagnostic(const std::string& message);

// Installs, once per process, the fault signal handlers and the
// AddressSanitizer report callback.
void install_fault_handlers();

// Gives the calling thread an alternate signal stack if it has none, so that
// a CUDA thread overflowing its stack can still be reported.
void ensure_signal_stack();

// The signal the launch watchdog sends to workers stuck in a CUDA thread.
int timeout_signal();

// The report of a CUDA thread stopped by a signal: a memory fault at
// `address`, a stack overflow, or the launch's time limit.
struct LaunchState;
std::string describe_fault(const LaunchState& launch, const std::string& thread, int signal, const void* address,
                           const void* pc, bool stack_overflow, std::size_t stack_bytes);

// "file.cu:12" for a code address: the innermost frame outside the runtime's
// own headers. Empty when no symbol information is available. `exact`: pc is
// the instruction itself (a signal's), not a return address (the call's
// next instruction, which may already belong to the next line).
std::string symbolize(const void* pc, bool exact);

}  // namespace cudacpu
