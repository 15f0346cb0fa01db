// The front-end check's <cuda_runtime.h>: prelude.h, force-included, already declared everything.
#pragma once
