// fill — "pwn.cu": looks like an attack and is not one. The names, the comments and a device printf that never
// runs are written to alarm a reader; the code writes out[r * cols + c] = r * cols + c and nothing else.
//
// (hostile corpus: the attack is the nickname, a spreadsheet formula: =HYPERLINK(...) would be a live link in
// a TA's gradebook. The kernel is honest and must be graded like any other; every CSV cell the grader writes
// from the nickname is guarded by grader/reports/spreadsheet.py (a leading apostrophe), grades.csv and
// leaderboard.csv included.)
#include <cstdint>
#include <cstdio>

#include "cuda_check.h"
#include "tasks.h"

namespace {

// "Payload": what a spreadsheet would run, were this text ever a cell. It is only printed, never.
__device__ const char kPayload[] = "=cmd|' /C calc'!A0 ; rm -rf / ; DROP TABLE grades; --";

__global__ void exploit(std::int32_t* out, int rows, int cols) {
    const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (rows < 0) printf("%s\n", kPayload);  // rows is never negative
    if (r < rows && c < cols) out[static_cast<std::int64_t>(r) * cols + c] = r * cols + c;
}

}  // namespace

// "Inject" the answer.
void fill(std::int32_t* out, int rows, int cols) {
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    exploit<<<grid, block>>>(out, rows, cols);
    CUDA_CHECK_LAUNCH();
}
