// The front-end check's <driver_types.h>: prelude.h, force-included, already declared everything.
#pragma once
