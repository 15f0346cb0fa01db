// fill: out[r][c] = r * cols + c. The first exercise in thread organization.
#include "../registry.h"
#include "cuda_check.h"
#include "shape_sets.h"
#include "tasks.h"

namespace {

__global__ void fill_reference(double* value, double* magnitude, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        value[i] = static_cast<double>(i);
        magnitude[i] = 0;
    }
}

}  // namespace

Task make_fill_task() {
    Task t;
    t.id = "fill";
    t.summary = "a 2-D grid of 2-D blocks writes out[r][c] = r*cols + c";
    t.file = "fill.cu";
    t.shape_kind = ShapeKind::matrix;
    t.dtypes = {DType::i32};
    t.tolerance = {ToleranceModel::exact, 0};
    t.metric = Metric::gbps;
    t.shapes = matrix_shape_sets();
    t.input_names = {};
    t.input_elements = [](const Shape&) { return std::vector<std::size_t>{}; };
    t.output_layout = [](const Shape& s) { return OutputLayout{s.rows(), s.cols()}; };
    t.terms_summed = [](const Shape&) { return 1.0; };
    t.flops = [](const Shape&) { return 0.0; };
    t.min_bytes = [](const Shape& s, DType) { return 4.0 * s.rows() * s.cols(); };
    t.launch = [](DType, const Shape& s, const DeviceArgs& a) {
        fill(static_cast<std::int32_t*>(a.output), static_cast<int>(s.rows()), static_cast<int>(s.cols()));
    };
    t.reference_host = [](const Shape& s, const std::vector<std::vector<double>>&) {
        HostReference r;
        const std::size_t n = static_cast<std::size_t>(s.rows() * s.cols());
        r.value.resize(n);
        r.magnitude.assign(n, 0.0);
        for (std::size_t i = 0; i < n; ++i) r.value[i] = static_cast<double>(i);
        return r;
    };
    t.reference_device = [](DType, const Shape& s, const DeviceArgs&, double* value, double* magnitude) {
        fill_reference<<<1024, 256>>>(value, magnitude, static_cast<std::size_t>(s.rows() * s.cols()));
        CUDA_CHECK(cudaGetLastError());
    };
    return t;
}
