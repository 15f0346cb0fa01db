// The front-end check's <cuda_runtime_api.h>: prelude.h, force-included, already declared everything.
#pragma once
