// transpose: out = in^T, with in rows x cols and out cols x rows.
#include "../registry.h"
#include "cuda_check.h"
#include "shape_sets.h"
#include "tasks.h"

namespace {

template <typename T>
__global__ void transpose_reference(const T* in, double* value, double* magnitude, std::int64_t rows,
                                    std::int64_t cols) {
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        const std::int64_t r = static_cast<std::int64_t>(i) / cols, c = static_cast<std::int64_t>(i) % cols;
        value[c * rows + r] = static_cast<double>(in[i]);
        magnitude[c * rows + r] = 0;
    }
}

using Types = TYPE_LIST(TRANSPOSE_TYPES);

}  // namespace

Task make_transpose_task() {
    Task t;
    t.id = "transpose";
    t.summary = "B = A^T with coalesced reads and writes (shared-memory tile)";
    t.file = "transpose.cu";
    t.shape_kind = ShapeKind::matrix;
    t.dtypes = dtypes_of(Types{});
    t.tolerance = {ToleranceModel::exact, 0};
    t.int_range = IntRange::full;
    t.metric = Metric::gbps;
    t.shapes = matrix_shape_sets();
    t.input_names = {"in"};
    t.input_elements = [](const Shape& s) {
        return std::vector<std::size_t>{static_cast<std::size_t>(s.rows() * s.cols())};
    };
    t.output_layout = [](const Shape& s) { return OutputLayout{s.cols(), s.rows()}; };
    t.terms_summed = [](const Shape&) { return 1.0; };
    t.flops = [](const Shape&) { return 0.0; };
    t.min_bytes = [](const Shape& s, DType d) { return 2.0 * dtype_size(d) * s.rows() * s.cols(); };
    t.launch = [](DType d, const Shape& s, const DeviceArgs& a) {
        dispatch_listed(Types{}, d, [&](auto tag) {
            using T = typename decltype(tag)::type;
            transpose<T>(static_cast<const T*>(a.inputs[0]), static_cast<T*>(a.output), static_cast<int>(s.rows()),
                         static_cast<int>(s.cols()));
        });
    };
    t.reference_host = [](const Shape& s, const std::vector<std::vector<double>>& in) {
        HostReference r;
        const std::int64_t rows = s.rows(), cols = s.cols();
        r.value.resize(in[0].size());
        r.magnitude.assign(in[0].size(), 0.0);
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) r.value[j * rows + i] = in[0][i * cols + j];
        return r;
    };
    t.reference_device = [](DType d, const Shape& s, const DeviceArgs& a, double* value, double* magnitude) {
        dispatch_listed(Types{}, d, [&](auto tag) {
            using T = typename decltype(tag)::type;
            transpose_reference<<<1024, 256>>>(static_cast<const T*>(a.inputs[0]), value, magnitude, s.rows(),
                                               s.cols());
        });
        CUDA_CHECK(cudaGetLastError());
    };
    return t;
}
