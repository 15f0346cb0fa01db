// The time limit of a launch. A CUDA thread that never reaches a barrier
// never gives its worker back, so a kernel stuck in a loop would hang the
// program; the watchdog notices, and signals the workers so that each leaves
// its CUDA thread and reports where it was (cudaErrorLaunchTimeout).
#pragma once

#include "launch_state.h"

namespace cudacpu {

void watchdog_arm(LaunchState* launch, double seconds);
void watchdog_disarm();

}  // namespace cudacpu
