#include "gpu_baselines.h"

#include <stdexcept>

#include "cuda_check.h"
#include "device_buffer.h"

namespace {

const Task& registry_task(const char* id) {
    const Task* t = find_task(id);
    if (!t) throw std::logic_error(std::string("the bench needs task ") + id + ", which the registry lacks");
    return *t;
}

}  // namespace

std::shared_ptr<CublasHandle> pedantic_cublas() {
    auto handle = std::make_shared<CublasHandle>();
    CUBLAS_CHECK(cublasSetMathMode(handle->get(), CUBLAS_PEDANTIC_MATH));
    return handle;
}

Task cublas_sgemm_task(std::shared_ptr<CublasHandle> handle) {
    Task t = registry_task("matmul_fast");
    t.launch = [handle](DType d, const Shape& s, const DeviceArgs& args) {
        if (d != DType::f32) throw std::logic_error("the cuBLAS baseline is float32 only");
        const int m = static_cast<int>(s.m()), n = static_cast<int>(s.n()), k = static_cast<int>(s.k());
        const float one = 1, zero = 0;
        // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
        CUBLAS_CHECK(cublasSgemm(handle->get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
                                 static_cast<const float*>(args.inputs[1]), n,
                                 static_cast<const float*>(args.inputs[0]), k, &zero,
                                 static_cast<float*>(args.output), n));
    };
    return t;
}

double CopyTiming::gbps() const {
    const double seconds = timing.stats.median * 1e-3;
    return seconds > 0 ? bytes_moved / seconds / 1e9 : 0;
}

CopyTiming time_device_copy(std::size_t bytes_moved, const TimingOptions& options, L2Flusher& flusher) {
    CopyTiming c;
    const std::size_t buffer = bytes_moved / 2;
    c.bytes_moved = 2 * buffer;
    DeviceBuffer src(buffer), dst(buffer);
    CUDA_CHECK(cudaMemset(src.get(), 1, buffer));
    c.timing = time_launcher(
        [&] { CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), buffer, cudaMemcpyDeviceToDevice, 0)); }, [] {},
        [](int) {}, options, flusher);
    return c;
}
