// What the CPU backend reports where a GPU would hang, give garbage or say
// only "unspecified launch failure": each test makes one mistake on purpose
// and checks the CUDA error and the words and file:line of the report.
#include <cassert>
#include <string>
#include <vector>

#include "support.h"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
std::string at(const char* mark) { return file_line(__FILE__, mark); }

// --- barriers -----------------------------------------------------------------------------
__global__ void returns_before_barrier(float* out, int n) {
    __shared__ float s[64];
    if (threadIdx.x >= n) return;  // mark:early-return
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();  // mark:barrier-after-return
    out[threadIdx.x] = s[n - 1 - threadIdx.x];
}

__global__ void waits_while_others_return(float* out) {
    if (threadIdx.x < 16) {
        __syncthreads();  // mark:partial-barrier
    }
    out[threadIdx.x] = 1;
}  // mark:kernel-end

__global__ void divergent_barriers(float* out) {
    if (threadIdx.x % 2 == 0) {
        __syncthreads();  // mark:even-barrier
    } else {
        __syncthreads();  // mark:odd-barrier
    }
    out[threadIdx.x] = 1;
}

// --- warp functions -----------------------------------------------------------------------
__global__ void shuffle_after_lanes_returned(float* out) {
    if (threadIdx.x >= 16) return;  // mark:lanes-return
    const float v = __shfl_xor_sync(0xffffffff, 1.0f, 1);  // mark:full-mask-shuffle
    out[threadIdx.x] = v;
}

__global__ void mask_without_caller(float* out) {
    out[threadIdx.x] = __shfl_sync(0x1u, 2.0f, 0);  // mark:mask-without-caller
}

__global__ void mismatched_warp_functions(float* out) {
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0xffffffff, 1.0f, 0);  // mark:shfl-half
    else out[threadIdx.x] = static_cast<float>(__ballot_sync(0xffffffff, 1));    // mark:ballot-half
}

__global__ void bad_width(float* out) { out[threadIdx.x] = __shfl_down_sync(0xffffffff, 1.0f, 1, 24); }

// --- memory -------------------------------------------------------------------------------
__global__ void shared_past_the_end(float* out) {
    __shared__ float tile[4][8];
    tile[threadIdx.y][threadIdx.x + 1] = 1.0f;  // mark:shared-overflow
    __syncthreads();
    out[threadIdx.y * 8 + threadIdx.x] = tile[threadIdx.y][threadIdx.x];
}

__global__ void reads_unwritten_shared(float* out) {
    __shared__ float s[32];
    if (threadIdx.x < 16) s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}

__global__ void reads_one_past(const float* a, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i + 1];  // mark:global-overflow
}

__global__ void copies(const float* a, float* out) { out[threadIdx.x] = a[threadIdx.x]; }

// --- the rest -----------------------------------------------------------------------------
__global__ void spins(volatile int* flag) {
    while (*flag == 0) {  // mark:spin
    }
}

__global__ void asserts(int* out) {
    assert(threadIdx.x < 5);  // mark:assert
    out[threadIdx.x] = 1;
}

__global__ void traps() { __trap(); }  // mark:trap

__device__ int deep(int n) {
    volatile char big[2048];
    big[0] = static_cast<char>(n);
    return n == 0 ? big[0] : deep(n - 1) + big[0];
}
__global__ void recurses(int* out, int n) { out[0] = deep(n); }

__global__ void __launch_bounds__(64) bounded(int* out) { out[threadIdx.x] = 1; }

__global__ void one_per_block(int* out) { out[blockIdx.y] = 1; }

__global__ void uses_dynamic_shared(int* out, int n) {
    extern __shared__ int dyn[];
    dyn[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = dyn[n - 1];
}

__global__ void too_much_static_shared(float* out) {
    __shared__ float big[13000];  // 52000 bytes: more than 48 KiB
    big[threadIdx.x] = 1;
    out[0] = big[0];
}

}  // namespace

TEST_CASE("a thread that returns while others wait at __syncthreads is reported with both lines") {
    ExpectFailure expect;
    DeviceArray<float> out(64, "out");
    returns_before_barrier<<<1, 64>>>(out.get(), 40);
    CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, "returned at " + at("mark:early-return")), d);
    CHECK_MESSAGE(has(d, "__syncthreads() at " + at("mark:barrier-after-return")), d);
    CHECK_MESSAGE(has(d, "thread (40,0,0) of block (0,0,0)"), d);
}

TEST_CASE("threads waiting at a barrier the others never reach are reported") {
    ExpectFailure expect;
    DeviceArray<float> out(32, "out");
    waits_while_others_return<<<1, 32>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, at("mark:partial-barrier")), d);
    CHECK_MESSAGE(has(d, "returned at " + at("mark:kernel-end")), d);
}

TEST_CASE("threads at different __syncthreads() calls are reported with both lines") {
    ExpectFailure expect;
    DeviceArray<float> out(32, "out");
    divergent_barriers<<<1, 32>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, "different __syncthreads()"), d);
    CHECK_MESSAGE(has(d, at("mark:even-barrier")), d);
    CHECK_MESSAGE(has(d, at("mark:odd-barrier")), d);
}

TEST_CASE("a full-mask shuffle after lanes returned names the lane and both lines") {
    ExpectFailure expect;
    DeviceArray<float> out(32, "out");
    shuffle_after_lanes_returned<<<1, 32>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, "__shfl_xor_sync at " + at("mark:full-mask-shuffle")), d);
    CHECK_MESSAGE(has(d, "returned at " + at("mark:lanes-return")), d);
    CHECK_MESSAGE(has(d, "0xffffffff"), d);
}

TEST_CASE("a warp function's mask must include the caller, lanes must agree, width must be a power of 2") {
    DeviceArray<float> out(32, "out");
    {
        ExpectFailure expect;
        mask_without_caller<<<1, 32>>>(out.get());
        CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
        CHECK_MESSAGE(has(expect.diagnostic(), "does not include its own lane"), expect.diagnostic());
        CHECK_MESSAGE(has(expect.diagnostic(), at("mark:mask-without-caller")), expect.diagnostic());
    }
    {
        ExpectFailure expect;
        mismatched_warp_functions<<<1, 32>>>(out.get());
        CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
        const std::string d = expect.diagnostic();
        CHECK_MESSAGE(has(d, "__shfl_sync at " + at("mark:shfl-half")), d);
        CHECK_MESSAGE(has(d, "__ballot_sync at " + at("mark:ballot-half")), d);
    }
    {
        ExpectFailure expect;
        bad_width<<<1, 32>>>(out.get());
        CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
        CHECK_MESSAGE(has(expect.diagnostic(), "width 24"), expect.diagnostic());
    }
}

TEST_CASE("a shared-memory access past a __shared__ array names it, the element and the line") {
    if (!cudacpu_checking_memory()) return;
    ExpectFailure expect;
    DeviceArray<float> out(32, "out");
    shared_past_the_end<<<1, dim3(8, 4)>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, "wrote tile[4][0] (element 32), but __shared__ float tile[4][8] has 32 elements"), d);
    CHECK_MESSAGE(has(d, "thread (7,3,0) of block (0,0,0), " + at("mark:shared-overflow")), d);
}

TEST_CASE("shared memory no thread wrote reads as NaN garbage, not as zero") {
    DeviceArray<float> out(32, "out");
    reads_unwritten_shared<<<1, 32>>>(out.get());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    const auto got = out.download();
    for (int i = 0; i < 16; ++i) CHECK(got[i] == 1.0f);
    for (int i = 16; i < 32; ++i) CHECK(std::isnan(got[i]));
}

TEST_CASE("a global read one past the end names the array, the index, the thread and the line") {
    if (!cudacpu_checking_memory()) return;
    ExpectFailure expect;
    DeviceArray<float> a(1024, "a"), out(1024, "out");
    reads_one_past<<<4, 256>>>(a.get(), out.get(), 1024);
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    const std::string d = expect.diagnostic();
    CHECK_MESSAGE(has(d, "read a[1024] but a has 1024 elements (thread (255,0,0) of block (3,0,0), " +
                             at("mark:global-overflow") + ")"),
                  d);
}

TEST_CASE("an array placed inside a larger allocation: access to the slack is reported with its name") {
    if (!cudacpu_checking_memory()) return;
    ExpectFailure expect;
    DeviceArray<float> pool(4096, nullptr), out(64, "out");
    float* a = pool.get() + 512;  // 64 elements at an offset, as the harness places inputs
    REQUIRE(cudacpu_set_valid_range(a, 64 * sizeof(float)) == cudaSuccess);
    cudacpu_name_allocation(a, "a", 64, sizeof(float));
    reads_one_past<<<1, 64>>>(a, out.get(), 64);
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    CHECK_MESSAGE(has(expect.diagnostic(), "read a[64] but a has 64 elements"), expect.diagnostic());
}

TEST_CASE("a host pointer passed to a kernel is an illegal address, named by argument") {
    ExpectFailure expect;
    std::vector<float> host(32);
    DeviceArray<float> out(32, "out");
    copies<<<1, 32>>>(host.data(), out.get());
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    CHECK_MESSAGE(has(expect.diagnostic(), "argument 1 is"), expect.diagnostic());
    CHECK_MESSAGE(has(expect.diagnostic(), "not device memory"), expect.diagnostic());
}

TEST_CASE("launch limits fail exactly as on an sm_90 GPU (CUDA 13: cudaErrorInvalidValue, see gpu_reference/h100.txt)") {
    DeviceArray<int> out(70000, "out");
    ExpectFailure expect;
    one_per_block<<<dim3(1, 70000), 1>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK_MESSAGE(has(expect.diagnostic(), "grid (1,70000,1) is too large"), expect.diagnostic());
    one_per_block<<<dim3(1, 65535), 1>>>(out.get());
    CHECK(cudaGetLastError() == cudaSuccess);
    one_per_block<<<1, 1025>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    one_per_block<<<1, dim3(1, 1, 65)>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    one_per_block<<<1, dim3(32, 32, 2)>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    one_per_block<<<dim3(0, 1), 1>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    one_per_block<<<dim3(2147483648u), 1>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    bounded<<<1, 128>>>(out.get());
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK_MESSAGE(has(expect.diagnostic(), "__launch_bounds__(64)"), expect.diagnostic());
    bounded<<<1, 64>>>(out.get());
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("dynamic shared memory above 48 KiB needs cudaFuncSetAttribute, and 227 KiB is the most") {
    DeviceArray<int> out(1, "out");
    ExpectFailure expect;
    const int big = 64 * 1024;
    uses_dynamic_shared<<<1, 32, 48 * 1024>>>(out.get(), 32);
    CHECK(cudaGetLastError() == cudaSuccess);
    uses_dynamic_shared<<<1, 32, big>>>(out.get(), 32);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaFuncSetAttribute(uses_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, big) == cudaSuccess);
    uses_dynamic_shared<<<1, 32, big>>>(out.get(), 32);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(out.download()[0] == 31);
    CHECK(cudaFuncSetAttribute(uses_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024 + 1) ==
          cudaErrorInvalidValue);
    uses_dynamic_shared<<<1, 32, 228 * 1024>>>(out.get(), 32);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
}

TEST_CASE("more than 48 KiB of static __shared__ memory is refused") {
    ExpectFailure expect;
    DeviceArray<float> out(1, "out");
    too_much_static_shared<<<1, 32>>>(out.get());
    CHECK(cudaGetLastError() != cudaSuccess);
    CHECK_MESSAGE(has(expect.diagnostic(), "48 KiB"), expect.diagnostic());
}

TEST_CASE("a kernel that never finishes is stopped at the time limit, naming the line it was on") {
    ExpectFailure expect;
    const double before = cudacpu_launch_timeout();
    cudacpu_set_launch_timeout(0.3);
    DeviceArray<int> flag(1, "flag");
    REQUIRE(cudaMemset(flag.get(), 0, sizeof(int)) == cudaSuccess);
    spins<<<4, 64>>>(flag.get());
    CHECK(cudaGetLastError() == cudaErrorLaunchTimeout);
    cudacpu_set_launch_timeout(before);
    CHECK_MESSAGE(has(expect.diagnostic(), "did not finish within 0.3 s"), expect.diagnostic());
    CHECK_MESSAGE(has(expect.diagnostic(), at("mark:spin")), expect.diagnostic());
}

TEST_CASE("assert and __trap in a kernel end the launch with the GPU's errors and say where") {
    DeviceArray<int> out(32, "out");
    {
        ExpectFailure expect;
        asserts<<<1, 32>>>(out.get());
        CHECK(cudaGetLastError() == cudaErrorAssert);
        CHECK_MESSAGE(has(expect.diagnostic(), "failed assert(threadIdx.x < 5) at " + at("mark:assert")),
                      expect.diagnostic());
        CHECK_MESSAGE(has(expect.diagnostic(), "thread (5,0,0)"), expect.diagnostic());
    }
    {
        ExpectFailure expect;
        traps<<<1, 1>>>();
        CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
        CHECK_MESSAGE(has(expect.diagnostic(), "__trap() at " + at("mark:trap")), expect.diagnostic());
    }
}

TEST_CASE("a thread that overflows its stack is reported, not a crash") {
    ExpectFailure expect;
    DeviceArray<int> out(1, "out");
    recurses<<<1, 2>>>(out.get(), 100000);
    CHECK(cudaGetLastError() == cudaErrorIllegalAddress);
    CHECK_MESSAGE(has(expect.diagnostic(), "overflowed its"), expect.diagnostic());
}

TEST_CASE("after a kernel fault every call fails with it, until the sticky error is cleared") {
    DeviceArray<float> out(32, "out");
    {
        ExpectFailure expect;
        traps<<<1, 1>>>();
        CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
        CHECK(cudaGetLastError() == cudaErrorLaunchFailure);  // sticky: not cleared by reading it
        CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
        float* p = nullptr;
        CHECK(cudaMalloc(&p, 4) == cudaErrorLaunchFailure);
        CHECK(cudacpu_clear_sticky_error() == cudaErrorLaunchFailure);
    }
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    copies<<<1, 32>>>(out.get(), out.get());
    CHECK(cudaGetLastError() == cudaSuccess);
}
