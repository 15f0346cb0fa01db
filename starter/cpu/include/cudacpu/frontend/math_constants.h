// The front-end check's <math_constants.h>: the CPU backend's own, one copy of the constants.
#pragma once
#include "../../math_constants.h"
