// The GPU probe (probe.cu): its answers as text, one question per line.
#pragma once

#include <string>

std::string gpu_probe();
