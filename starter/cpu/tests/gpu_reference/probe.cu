// What a GPU answers to the questions the CPU backend must answer the same
// way: warp shuffles and votes (widths, partial masks, out-of-range lanes),
// barrier reductions, conversion and bit intrinsics, atomics' wrap-around,
// and the errors of launches a GPU refuses.
//
// The same file is compiled by nvcc on a GPU (probe_main.cu prints it; the
// recorded output is h100.txt) and by cudacpu.py for the tests, which compare
// the CPU backend's answers with the recorded ones line by line.
//
//   nvcc -std=c++17 -arch=sm_90 -o probe probe.cu probe_main.cu && ./probe > h100.txt
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

#include "probe.h"

namespace {

constexpr int kWarps = 2, kThreads = 32 * kWarps;

// One int per thread per question. Each value is lane * 10 + warp, so that
// the source of a shuffled value is visible in it.
enum Question {
    kIdxRotate,      // __shfl_sync(full, v, (lane * 7 + 3) % 32)
    kIdxWidth8,      // __shfl_sync(full, v, lane + 5, 8)
    kIdxBeyond,      // __shfl_sync(full, v, 40)
    kUp3,            // __shfl_up_sync(full, v, 3)
    kUp3Width8,      // __shfl_up_sync(full, v, 3, 8)
    kDown5,          // __shfl_down_sync(full, v, 5)
    kDown5Width16,   // __shfl_down_sync(full, v, 5, 16)
    kDown33,         // __shfl_down_sync(full, v, 33)
    kXor1,           // __shfl_xor_sync(full, v, 1)
    kXor16,          // __shfl_xor_sync(full, v, 16)
    kXor4Width8,     // __shfl_xor_sync(full, v, 4, 8)
    kXor8Width8,     // __shfl_xor_sync(full, v, 8, 8)
    kHalfMaskDown,   // lanes < 16: __shfl_down_sync(0xffff, v, 2, 16) (lanes 14, 15 keep their own)
    kBallot,         // __ballot_sync(full, lane % 3 == 0)
    kBallotHalf,     // lanes < 16: __ballot_sync(0xffff, lane % 2)
    kAny,            // __any_sync(full, lane == 7 + warp)
    kAll,            // __all_sync(full, lane < 31)
    kActiveMask,     // __activemask() inside if (lane < 20 + warp)
    kMatchAny,       // __match_any_sync(full, lane / 4)
    kReduceAdd,      // __reduce_add_sync(full, lane)
    kReduceMin,      // __reduce_min_sync(full, 100 - lane)  (signed)
    kReduceMax,      // __reduce_max_sync(full, lane * 3)    (unsigned)
    kSyncCount,      // __syncthreads_count(threadIdx.x % 5 == 0)
    kSyncAnd,        // __syncthreads_and(threadIdx.x < 64)
    kSyncOr,         // __syncthreads_or(threadIdx.x == 63)
    kQuestions
};
const char* const kNames[kQuestions] = {
    "shfl idx (lane*7+3)%32", "shfl idx lane+5 width 8", "shfl idx 40", "shfl_up 3", "shfl_up 3 width 8",
    "shfl_down 5", "shfl_down 5 width 16", "shfl_down 33", "shfl_xor 1", "shfl_xor 16", "shfl_xor 4 width 8",
    "shfl_xor 8 width 8", "shfl_down 2 width 16 mask 0xffff", "ballot lane%3==0", "ballot lane%2 mask 0xffff",
    "any lane==7+warp", "all lane<31", "activemask if lane<20+warp", "match_any lane/4", "reduce_add lane",
    "reduce_min 100-lane", "reduce_max lane*3", "syncthreads_count tid%5==0", "syncthreads_and tid<64",
    "syncthreads_or tid==63"};

__global__ void warp_questions(int* out) {
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int v = lane * 10 + warp;
    const unsigned full = 0xffffffffu;
    int* o = out + tid;
    o[kIdxRotate * kThreads] = __shfl_sync(full, v, (lane * 7 + 3) % 32);
    o[kIdxWidth8 * kThreads] = __shfl_sync(full, v, lane + 5, 8);
    o[kIdxBeyond * kThreads] = __shfl_sync(full, v, 40);
    o[kUp3 * kThreads] = __shfl_up_sync(full, v, 3);
    o[kUp3Width8 * kThreads] = __shfl_up_sync(full, v, 3, 8);
    o[kDown5 * kThreads] = __shfl_down_sync(full, v, 5);
    o[kDown5Width16 * kThreads] = __shfl_down_sync(full, v, 5, 16);
    o[kDown33 * kThreads] = __shfl_down_sync(full, v, 33);
    o[kXor1 * kThreads] = __shfl_xor_sync(full, v, 1);
    o[kXor16 * kThreads] = __shfl_xor_sync(full, v, 16);
    o[kXor4Width8 * kThreads] = __shfl_xor_sync(full, v, 4, 8);
    o[kXor8Width8 * kThreads] = __shfl_xor_sync(full, v, 8, 8);
    o[kHalfMaskDown * kThreads] = lane < 16 ? __shfl_down_sync(0xffffu, v, 2, 16) : -2;
    o[kBallot * kThreads] = static_cast<int>(__ballot_sync(full, lane % 3 == 0));
    o[kBallotHalf * kThreads] = lane < 16 ? static_cast<int>(__ballot_sync(0xffffu, lane % 2)) : -2;
    o[kAny * kThreads] = __any_sync(full, lane == 7 + warp);
    o[kAll * kThreads] = __all_sync(full, lane < 31);
    int active = -2;
    if (lane < 20 + warp) active = static_cast<int>(__activemask());
    __syncwarp();
    o[kActiveMask * kThreads] = active;
    o[kMatchAny * kThreads] = static_cast<int>(__match_any_sync(full, lane / 4));
    o[kReduceAdd * kThreads] = static_cast<int>(__reduce_add_sync(full, static_cast<unsigned>(lane)));
    o[kReduceMin * kThreads] = __reduce_min_sync(full, 100 - lane);
    o[kReduceMax * kThreads] = static_cast<int>(__reduce_max_sync(full, static_cast<unsigned>(lane * 3)));
    o[kSyncCount * kThreads] = __syncthreads_count(tid % 5 == 0);
    o[kSyncAnd * kThreads] = __syncthreads_and(tid < 64);
    o[kSyncOr * kThreads] = __syncthreads_or(tid == 63);
}

constexpr int kScalars = 40;
const char* const kScalarNames[kScalars] = {
    "__float2int_rn(2.5f)",       "__float2int_rn(-2.5f)",        "__float2int_rn(3.5f)",
    "__float2int_rz(-2.7f)",      "__float2int_ru(-2.7f)",        "__float2int_rd(-2.2f)",
    "__float2int_rn(3e9f)",       "__float2int_rn(-3e9f)",        "__float2int_rn(nan)",
    "__float2uint_rn(-1.0f)",     "__double2int_rn(-0.5)",        "__float_as_int(-0.0f)",
    "__popc(0xF0F0F0F0u)",        "__popcll(~0ull)",              "__clz(0)",
    "__clz(1)",                   "__clz(-1)",                    "__clzll(1)",
    "__ffs(0)",                   "__ffs(8)",                     "__ffs(INT_MIN)",
    "__brev(1u)",                 "__byte_perm(0x33221100,0x77665544,0x5140)", "__byte_perm(x,y,0x0123)",
    "__funnelshift_l(0x80000001,0x1,1)", "__funnelshift_r(0x80000001,0x1,1)", "__funnelshift_lc(1,2,40)",
    "__mulhi(-5,0x40000000)",     "__umulhi(0xFFFFFFFF,2)",       "__mul24(0x800001,2)",
    "__sad(3,10,100)",            "__usad(3u,10u,100u)",          "min(-1,1u)",
    "max(-1,1u)",                 "atomicInc sequence limit 2",   "atomicDec sequence limit 2",
    "atomicCAS(old 5, compare 5, 9)", "atomicMax(int -3, 2)",     "atomicMin(unsigned 7, 3)",
    "atomicExch(float bits)"};

__global__ void scalar_questions(long long* out) {
    const float nan = __int_as_float(0x7fc00000);
    int i = 0;
    out[i++] = __float2int_rn(2.5f);
    out[i++] = __float2int_rn(-2.5f);
    out[i++] = __float2int_rn(3.5f);
    out[i++] = __float2int_rz(-2.7f);
    out[i++] = __float2int_ru(-2.7f);
    out[i++] = __float2int_rd(-2.2f);
    out[i++] = __float2int_rn(3e9f);
    out[i++] = __float2int_rn(-3e9f);
    out[i++] = __float2int_rn(nan);
    out[i++] = __float2uint_rn(-1.0f);
    out[i++] = __double2int_rn(-0.5);
    out[i++] = __float_as_int(-0.0f);
    out[i++] = __popc(0xF0F0F0F0u);
    out[i++] = __popcll(~0ull);
    out[i++] = __clz(0);
    out[i++] = __clz(1);
    out[i++] = __clz(-1);
    out[i++] = __clzll(1);
    out[i++] = __ffs(0);
    out[i++] = __ffs(8);
    out[i++] = __ffs(INT_MIN);
    out[i++] = __brev(1u);
    out[i++] = __byte_perm(0x33221100u, 0x77665544u, 0x5140u);
    out[i++] = __byte_perm(0x33221100u, 0x77665544u, 0x0123u);
    out[i++] = __funnelshift_l(0x80000001u, 0x1u, 1);
    out[i++] = __funnelshift_r(0x80000001u, 0x1u, 1);
    out[i++] = __funnelshift_lc(1u, 2u, 40);
    out[i++] = __mulhi(-5, 0x40000000);
    out[i++] = __umulhi(0xFFFFFFFFu, 2u);
    out[i++] = __mul24(0x800001, 2);
    out[i++] = __sad(3, 10, 100u);
    out[i++] = __usad(3u, 10u, 100u);
    out[i++] = min(-1, 1u);
    out[i++] = max(-1, 1u);
    // Atomics act on shared (or global) memory, not on a thread's locals.
    __shared__ unsigned counter;
    __shared__ int value, imax;
    __shared__ unsigned umin;
    __shared__ float f;
    unsigned seq = 0;
    counter = 0;
    for (int k = 0; k < 5; ++k) seq = seq * 10 + atomicInc(&counter, 2u);
    out[i++] = seq;
    counter = 1, seq = 0;
    for (int k = 0; k < 5; ++k) seq = seq * 10 + atomicDec(&counter, 2u);
    out[i++] = seq;
    value = 5;
    const int old = atomicCAS(&value, 5, 9);
    out[i++] = old * 100 + value;
    imax = -3;
    atomicMax(&imax, 2);
    out[i++] = imax;
    umin = 7;
    atomicMin(&umin, 3u);
    out[i++] = umin;
    f = 1.5f;
    const float before = atomicExch(&f, -2.25f);
    out[i++] = static_cast<long long>(__float_as_uint(before)) * 10 + (f == -2.25f);
}

__global__ void empty(int* out) {
    if (out) out[0] = 0;
}
__global__ void __launch_bounds__(64) bounded64(int* out) {
    if (out) out[0] = 0;
}
__global__ void dynamic_shared(int* out) {
    extern __shared__ int dyn[];
    dyn[threadIdx.x] = 1;
    if (out) out[0] = dyn[0];
}
__global__ void static_40k_plus_dynamic(int* out) {
    __shared__ int fixed[10240];  // 40 KiB
    extern __shared__ int dyn[];
    fixed[threadIdx.x] = 1;
    dyn[threadIdx.x] = 2;
    if (out) out[0] = fixed[0] + dyn[0];
}

std::string line(const char* name, long long value) { return std::string(name) + ": " + std::to_string(value) + "\n"; }

template <class Launch>
std::string launch_error(const char* name, Launch launch) {
    (void)cudaGetLastError();
    launch();
    const cudaError_t e = cudaGetLastError();
    (void)cudaDeviceSynchronize();
    return std::string(name) + ": " + cudaGetErrorName(e) + "\n";
}

}  // namespace

std::string gpu_probe() {
    std::string text;
    int* warp_out = nullptr;
    cudaMalloc(&warp_out, sizeof(int) * kThreads * kQuestions);
    warp_questions<<<1, kThreads>>>(warp_out);
    int host[kThreads * kQuestions];
    cudaMemcpy(host, warp_out, sizeof host, cudaMemcpyDeviceToHost);
    for (int q = 0; q < kQuestions; ++q) {
        text += std::string(kNames[q]) + ":";
        for (int t = 0; t < kThreads; ++t) text += " " + std::to_string(host[q * kThreads + t]);
        text += "\n";
    }
    cudaFree(warp_out);

    long long* scalars = nullptr;
    cudaMalloc(&scalars, sizeof(long long) * kScalars);
    scalar_questions<<<1, 1>>>(scalars);
    long long s[kScalars];
    cudaMemcpy(s, scalars, sizeof s, cudaMemcpyDeviceToHost);
    for (int i = 0; i < kScalars; ++i) text += line(kScalarNames[i], s[i]);
    cudaFree(scalars);

    int* out = nullptr;
    cudaMalloc(&out, sizeof(int));
    text += launch_error("grid (1,70000) block 1", [&] { empty<<<dim3(1, 70000), 1>>>(out); });
    text += launch_error("grid (1,65535) block 1", [&] { empty<<<dim3(1, 65535), 1>>>(out); });
    text += launch_error("grid.x 2^31", [&] { empty<<<dim3(2147483648u), 1>>>(out); });
    text += launch_error("grid (0,1)", [&] { empty<<<dim3(0, 1), 1>>>(out); });
    text += launch_error("block 1025", [&] { empty<<<1, 1025>>>(out); });
    text += launch_error("block (1,1,65)", [&] { empty<<<1, dim3(1, 1, 65)>>>(out); });
    text += launch_error("block (32,32,2)", [&] { empty<<<1, dim3(32, 32, 2)>>>(out); });
    text += launch_error("__launch_bounds__(64) with 128 threads", [&] { bounded64<<<1, 128>>>(out); });
    text += launch_error("dynamic shared 48 KiB", [&] { dynamic_shared<<<1, 32, 48 * 1024>>>(out); });
    text += launch_error("dynamic shared 64 KiB without attribute", [&] { dynamic_shared<<<1, 32, 64 * 1024>>>(out); });
    text += std::string("cudaFuncSetAttribute 64 KiB: ") +
            cudaGetErrorName(cudaFuncSetAttribute(dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  64 * 1024)) + "\n";
    text += launch_error("dynamic shared 64 KiB with attribute", [&] { dynamic_shared<<<1, 32, 64 * 1024>>>(out); });
    text += launch_error("dynamic shared 65 KiB with attribute 64 KiB",
                         [&] { dynamic_shared<<<1, 32, 65 * 1024>>>(out); });
    text += std::string("cudaFuncSetAttribute 227 KiB + 1: ") +
            cudaGetErrorName(cudaFuncSetAttribute(dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  227 * 1024 + 1)) + "\n";
    text += launch_error("static 40 KiB + dynamic 16 KiB without attribute",
                         [&] { static_40k_plus_dynamic<<<1, 32, 16 * 1024>>>(out); });
    text += launch_error("static 40 KiB + dynamic 8 KiB without attribute",
                         [&] { static_40k_plus_dynamic<<<1, 32, 8 * 1024>>>(out); });
    cudaFree(out);
    return text;
}
