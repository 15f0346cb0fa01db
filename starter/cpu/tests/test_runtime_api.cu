// The runtime calls course code makes behave as CUDA's: copies check their
// ranges, symbols, managed and page-locked memory work from kernels,
// streams and events time work, the device looks like an sm_90 GPU, and
// errors have CUDA's names and messages.
#include <cstring>
#include <string>
#include <vector>

#include "support.h"

namespace {

__constant__ float kScale[4];
__device__ int g_counter;

__global__ void scale(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * kScale[i % 4];
}

__global__ void bump(int* counter) { atomicAdd(counter, 1); }
__global__ void bump_symbol() { atomicAdd(&g_counter, 1); }

// A grid-stride loop over many elements in double precision, as the harness's own kernels do.
__global__ void grid_stride_square(double* x, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
         i += std::size_t(gridDim.x) * blockDim.x)
        x[i] = x[i] * x[i];
}

template <class T>
__global__ void templated_fill(T* out, T value, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

__global__ void uses_vector_types(float4* out) {
    const float2 a = make_float2(1, 2);
    const int4 b = make_int4(3, 4, 5, 6);
    const double2 c = make_double2(7, 8);
    const dim3 d(9);
    out[threadIdx.x] = make_float4(a.x + a.y, static_cast<float>(b.x + b.w), static_cast<float>(c.y), d.x + d.y + d.z);
}

}  // namespace

TEST_CASE("copies between host and device check the device range, and say why they fail") {
    ExpectFailure expect;
    DeviceArray<float> d(16, "d");
    std::vector<float> h(32, 1.0f);
    CHECK(cudaMemcpy(d.get(), h.data(), 16 * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemcpy(d.get(), h.data(), 17 * sizeof(float), cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
    CHECK(std::string(expect.diagnostic()).find("runs past the end of its 64-byte device allocation") !=
          std::string::npos);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaSuccess);  // not sticky
    CHECK(cudaMemcpy(h.data(), h.data() + 1, 4, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
    CHECK(cudaMemcpy(h.data(), d.get(), 4, static_cast<cudaMemcpyKind>(7)) == cudaErrorInvalidMemcpyDirection);
    CHECK(cudaMemset(d.get(), 0, 64) == cudaSuccess);
    CHECK(cudaMemsetAsync(d.get(), 0, 65) == cudaErrorInvalidValue);
    CHECK(cudaFree(h.data()) == cudaErrorInvalidValue);
    CHECK(cudaFree(nullptr) == cudaSuccess);
}

TEST_CASE("__constant__ and __device__ variables: cudaMemcpyToSymbol, FromSymbol, GetSymbolAddress") {
    const float scales[4] = {1, 2, 3, 4};
    REQUIRE(cudaMemcpyToSymbol(kScale, scales, sizeof scales) == cudaSuccess);
    CHECK(cudaMemcpyToSymbol(kScale, scales, sizeof scales, 4) == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);  // a failed call is also the last error, as in CUDA
    std::vector<float> in(8, 1.0f);
    DeviceArray<float> din(in, "in"), dout(8, "out");
    scale<<<1, 8>>>(din.get(), dout.get(), 8);
    CHECK(dout.download() == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
    const int zero = 0;
    REQUIRE(cudaMemcpyToSymbol(g_counter, &zero, sizeof zero) == cudaSuccess);
    bump_symbol<<<4, 32>>>();
    int* counter = nullptr;
    REQUIRE(cudaGetSymbolAddress(reinterpret_cast<void**>(&counter), g_counter) == cudaSuccess);
    bump<<<2, 32>>>(counter);  // a symbol's address is device memory
    REQUIRE(cudaGetLastError() == cudaSuccess);
    int got = 0;
    REQUIRE(cudaMemcpyFromSymbol(&got, g_counter, sizeof got) == cudaSuccess);
    CHECK(got == 6 * 32);
}

TEST_CASE("managed and page-locked memory can be handed to kernels") {
    int* managed = nullptr;
    int* pinned = nullptr;
    REQUIRE(cudaMallocManaged(&managed, sizeof(int)) == cudaSuccess);
    REQUIRE(cudaMallocHost(&pinned, sizeof(int)) == cudaSuccess);
    *managed = 0;
    *pinned = 0;
    bump<<<3, 10>>>(managed);
    bump<<<1, 10>>>(pinned);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(*managed == 30);
    CHECK(*pinned == 10);
    CHECK(cudaFree(managed) == cudaSuccess);
    CHECK(cudaFreeHost(pinned) == cudaSuccess);
}

TEST_CASE("streams, async copies and events: work on any stream is done when the call returns, events time it") {
    cudaStream_t s;
    cudaEvent_t start, stop;
    REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
    REQUIRE(cudaEventCreate(&start) == cudaSuccess);
    REQUIRE(cudaEventCreate(&stop) == cudaSuccess);
    const std::size_t n = 1 << 22;  // 2^22 doubles, a grid-stride loop like the harness's
    std::vector<double> h(n, 3.0);
    DeviceArray<double> d(n, "d");
    REQUIRE(cudaEventRecord(start, s) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(d.get(), h.data(), n * sizeof(double), cudaMemcpyHostToDevice, s) == cudaSuccess);
    grid_stride_square<<<1024, 256, 0, s>>>(d.get(), n);
    REQUIRE(cudaEventRecord(stop, s) == cudaSuccess);
    REQUIRE(cudaEventSynchronize(stop) == cudaSuccess);
    float ms = -1;
    REQUIRE(cudaEventElapsedTime(&ms, start, stop) == cudaSuccess);
    CHECK(ms > 0);
    CHECK(cudaStreamQuery(s) == cudaSuccess);
    const auto back = d.download();
    CHECK(back.front() == 9.0);
    CHECK(back.back() == 9.0);
    cudaEvent_t untimed;
    REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
    REQUIRE(cudaEventRecord(untimed) == cudaSuccess);
    CHECK(cudaEventElapsedTime(&ms, start, untimed) == cudaErrorInvalidResourceHandle);
    CHECK(cudaEventDestroy(untimed) == cudaSuccess);
    CHECK(cudaEventDestroy(untimed) == cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("the device is an sm_90 GPU with an H100's limits") {
    int count = 0, device = -1, sms = 0, optin = 0;
    REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
    CHECK(count == 1);
    REQUIRE(cudaGetDevice(&device) == cudaSuccess);
    CHECK(device == 0);
    cudaDeviceProp p;
    REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
    CHECK(p.major == 9);
    CHECK(p.minor == 0);
    CHECK(p.warpSize == 32);
    CHECK(p.maxThreadsPerBlock == 1024);
    CHECK(p.maxGridSize[1] == 65535);
    CHECK(p.sharedMemPerBlock == 48 * 1024);
    CHECK(std::string(p.name).find("CPU") != std::string::npos);
    REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    CHECK(sms == p.multiProcessorCount);
    REQUIRE(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
    CHECK(optin == 227 * 1024);
    CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice);
    (void)cudaGetLastError();
    int blocks = 0;
    REQUIRE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, bump, 256, 0) == cudaSuccess);
    CHECK(blocks == 8);
}

TEST_CASE("errors have CUDA's names and messages") {
    CHECK(std::string(cudaGetErrorName(cudaErrorInvalidValue)) == "cudaErrorInvalidValue");
    CHECK(std::string(cudaGetErrorString(cudaErrorInvalidValue)) == "invalid argument");
    CHECK(std::string(cudaGetErrorString(cudaErrorIllegalAddress)) == "an illegal memory access was encountered");
    CHECK(std::string(cudaGetErrorString(cudaErrorLaunchTimeout)) == "the launch timed out and was terminated");
    CHECK(std::string(cudaGetErrorName(static_cast<cudaError_t>(123456))) == "cudaErrorUnknown");
}

TEST_CASE("templates deduced at the launch, vector types and cudaLaunchKernel") {
    DeviceArray<double> dd(5, "dd");
    DeviceArray<float4> v(2, "v");
    templated_fill<<<1, 5>>>(dd.get(), 2.5, 5);  // T deduced as double, as nvcc does
    CHECK(dd.download() == std::vector<double>(5, 2.5));
    uses_vector_types<<<1, 2>>>(v.get());
    const auto got = v.download();
    CHECK(got[1].x == 3);
    CHECK(got[1].y == 9);
    CHECK(got[1].z == 8);
    CHECK(got[1].w == 11);
    CHECK(alignof(float4) == 16);
    CHECK(alignof(double2) == 16);
    CHECK(alignof(float2) == 8);
    DeviceArray<int> counter(1, "counter");
    counter.upload({0});
    int* ptr = counter.get();
    void* args[] = {&ptr};
    CHECK(cudaLaunchKernel(bump, dim3(2), dim3(16), args, 0, 0) == cudaSuccess);
    CHECK(counter.download()[0] == 32);
}
