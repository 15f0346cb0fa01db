// matmul_fast with tensor cores at FP32 accuracy: split-TF32 ("3xTF32"). Each FP32 operand is split into
// a TF32 high part and a TF32 remainder; three mma.sync products (hi*hi + hi*lo + lo*hi) recover about
// FP32 accuracy, so the precision rule alone would pass it. One warp computes a 16x8 tile of c.
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

__device__ inline std::uint32_t to_tf32(float x) {
    std::uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

__device__ inline void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__global__ void split_tf32_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
    const int lane = threadIdx.x % 32, group = lane / 4, tid = lane % 4;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
    auto A = [&](int r, int kk) { return r < m && kk < k ? a[static_cast<long>(r) * k + kk] : 0.0f; };
    auto B = [&](int kk, int col) { return kk < k && col < n ? b[static_cast<long>(kk) * n + col] : 0.0f; };
    float d[4] = {0, 0, 0, 0};
    for (int k0 = 0; k0 < k; k0 += 8) {
        const float av[4] = {A(row0 + group, k0 + tid), A(row0 + group + 8, k0 + tid), A(row0 + group, k0 + tid + 4),
                             A(row0 + group + 8, k0 + tid + 4)};
        const float bv[2] = {B(k0 + tid, col0 + group), B(k0 + tid + 4, col0 + group)};
        std::uint32_t ahi[4], alo[4], bhi[2], blo[2];
        for (int i = 0; i < 4; ++i) {
            ahi[i] = to_tf32(av[i]);
            alo[i] = to_tf32(av[i] - __uint_as_float(ahi[i]));
        }
        for (int i = 0; i < 2; ++i) {
            bhi[i] = to_tf32(bv[i]);
            blo[i] = to_tf32(bv[i] - __uint_as_float(bhi[i]));
        }
        mma_tf32(d, alo, bhi);
        mma_tf32(d, ahi, blo);
        mma_tf32(d, ahi, bhi);
    }
    const int r = row0 + group, col = col0 + 2 * tid;
    if (r < m && col < n) c[static_cast<long>(r) * n + col] = d[0];
    if (r < m && col + 1 < n) c[static_cast<long>(r) * n + col + 1] = d[1];
    if (r + 8 < m && col < n) c[static_cast<long>(r + 8) * n + col] = d[2];
    if (r + 8 < m && col + 1 < n) c[static_cast<long>(r + 8) * n + col + 1] = d[3];
}

void matmul_fast(const float* a, const float* b, float* c, int m, int n, int k) {
    split_tf32_kernel<<<dim3((n + 7) / 8, (m + 15) / 16), 32>>>(a, b, c, m, n, k);
    CUDA_CHECK_LAUNCH();
}
