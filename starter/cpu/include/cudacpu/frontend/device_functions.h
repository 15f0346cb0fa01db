// The front-end check's <device_functions.h>: prelude.h, force-included, already declared everything.
#pragma once
