// The front-end check's <vector_types.h>: prelude.h, force-included, already declared everything.
#pragma once
