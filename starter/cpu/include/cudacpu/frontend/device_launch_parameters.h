// The front-end check's <device_launch_parameters.h>: prelude.h, force-included, already declared everything.
#pragma once
