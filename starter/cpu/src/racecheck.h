// The race checker (racecheck.cpp): active in programs with kernels built
// by `cudacpu.py compile --racecheck`.
#pragma once

#include "launch_state.h"

namespace cudacpu {

bool racecheck_enabled();
// Around each launch: a fresh record of which thread touched which word.
void racecheck_begin(const LaunchState& launch);
void racecheck_end();

}  // namespace cudacpu
