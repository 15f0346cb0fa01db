// add: c = a + b, element by element.
#include "../registry.h"
#include "cuda_check.h"
#include "shape_sets.h"
#include "tasks.h"

namespace {

template <typename T>
__global__ void add_reference(const T* a, const T* b, double* value, double* magnitude, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
        value[i] = x + y;
        magnitude[i] = fabs(x) + fabs(y);
    }
}

using Types = TYPE_LIST(ADD_TYPES);

}  // namespace

Task make_add_task() {
    Task t;
    t.id = "add";
    t.summary = "C = A + B, element by element";
    t.file = "add.cu";
    t.shape_kind = ShapeKind::matrix;
    t.dtypes = dtypes_of(Types{});
    t.tolerance = {ToleranceModel::linear_k, 2};
    t.int_range = IntRange::sum_of_two;
    t.metric = Metric::gbps;
    t.shapes = matrix_shape_sets();
    t.input_names = {"a", "b"};
    t.input_elements = [](const Shape& s) {
        const auto n = static_cast<std::size_t>(s.rows() * s.cols());
        return std::vector<std::size_t>{n, n};
    };
    t.output_layout = [](const Shape& s) { return OutputLayout{s.rows(), s.cols()}; };
    t.terms_summed = [](const Shape&) { return 1.0; };
    t.flops = [](const Shape& s) { return 1.0 * s.rows() * s.cols(); };
    t.min_bytes = [](const Shape& s, DType d) { return 3.0 * dtype_size(d) * s.rows() * s.cols(); };
    t.launch = [](DType d, const Shape& s, const DeviceArgs& a) {
        dispatch_listed(Types{}, d, [&](auto tag) {
            using T = typename decltype(tag)::type;
            add<T>(static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[1]), static_cast<T*>(a.output),
                   static_cast<int>(s.rows()), static_cast<int>(s.cols()));
        });
    };
    t.reference_host = [](const Shape&, const std::vector<std::vector<double>>& in) {
        HostReference r;
        r.value.resize(in[0].size());
        r.magnitude.resize(in[0].size());
        for (std::size_t i = 0; i < in[0].size(); ++i) {
            r.value[i] = in[0][i] + in[1][i];
            r.magnitude[i] = std::fabs(in[0][i]) + std::fabs(in[1][i]);
        }
        return r;
    };
    t.reference_device = [](DType d, const Shape& s, const DeviceArgs& a, double* value, double* magnitude) {
        dispatch_listed(Types{}, d, [&](auto tag) {
            using T = typename decltype(tag)::type;
            add_reference<<<1024, 256>>>(static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[1]), value,
                                         magnitude, static_cast<std::size_t>(s.rows() * s.cols()));
        });
        CUDA_CHECK(cudaGetLastError());
    };
    return t;
}
