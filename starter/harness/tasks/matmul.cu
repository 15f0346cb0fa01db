// The three generations of matrix multiply: c = a · b, a (m x k), b (k x n).
// They share everything but the launcher, the element types and the shapes
// they are timed on.
#include <algorithm>

#include "../compensated.h"
#include "../reference_gpu.h"
#include "../registry.h"
#include "cuda_check.h"
#include "shape_sets.h"
#include "tasks.h"

namespace {

using Types = TYPE_LIST(MATMUL_TYPES);
using FastTypes = TypeList<void, float>;

// Compensated (compensated.h): float64 inputs' products are not exact in float64.
HostReference gemm_reference_host(const Shape& s, const std::vector<std::vector<double>>& in) {
    const std::int64_t m = s.m(), n = s.n(), k = s.k();
    const std::vector<double>& a = in[0];
    const std::vector<double>& b = in[1];
    HostReference r;
    r.value.assign(static_cast<std::size_t>(m * n), 0.0);
    r.magnitude.assign(static_cast<std::size_t>(m * n), 0.0);
    std::vector<CompensatedSum> row(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < m; ++i) {
        std::fill(row.begin(), row.end(), CompensatedSum{});
        for (std::int64_t p = 0; p < k; ++p) {
            const double x = a[i * k + p];
            for (std::int64_t j = 0; j < n; ++j) {
                row[j].add_product(x, b[p * n + j]);
                r.magnitude[i * n + j] += std::fabs(x * b[p * n + j]);
            }
        }
        for (std::int64_t j = 0; j < n; ++j) r.value[i * n + j] = row[j].value();
    }
    return r;
}

// graded_more: graded shapes beyond the three generations' common ones; timed: the grader's timed shapes.
template <typename Types, typename Launch>
Task gemm_task(const char* id, const char* summary, const std::vector<Shape>& graded_more, std::vector<Shape> timed,
               Launch launch) {
    Task t;
    t.id = id;
    t.summary = summary;
    t.file = std::string(id) + ".cu";
    t.shape_kind = ShapeKind::gemm;
    t.dtypes = dtypes_of(Types{});
    // sqrt(K) per element and a cap on the mean error, which catches half precision and TF32 (tolerance.h).
    t.tolerance = {ToleranceModel::sqrt_k, 8, 12};
    t.metric = Metric::gflops;
    t.int_range = IntRange::products_of_k;
    t.shapes.graded = gemm_graded_shapes(graded_more);
    t.shapes.test = gemm_test_shapes(t.shapes.graded);
    t.shapes.timed = std::move(timed);
    t.shapes.sanitize = {Shape::gemm(37, 41, 43)};
    t.shapes.profile = {Shape::gemm(256, 256, 256)};
    t.shapes.sweep = sweep_shapes_of(ShapeKind::gemm);
    t.shapes.data = {Shape::gemm(1, 1, 1), Shape::gemm(5, 7, 3), Shape::gemm(17, 33, 29)};
    t.input_names = {"a", "b"};
    t.input_elements = [](const Shape& s) {
        return std::vector<std::size_t>{static_cast<std::size_t>(s.m() * s.k()), static_cast<std::size_t>(s.k() * s.n())};
    };
    t.output_layout = [](const Shape& s) { return OutputLayout{s.m(), s.n()}; };
    t.terms_summed = [](const Shape& s) { return static_cast<double>(s.k()); };
    t.flops = [](const Shape& s) { return 2.0 * s.m() * s.n() * s.k(); };
    t.min_bytes = [](const Shape& s, DType d) {
        return static_cast<double>(dtype_size(d)) * (s.m() * s.k() + s.k() * s.n() + s.m() * s.n());
    };
    t.launch = [launch](DType d, const Shape& s, const DeviceArgs& a) {
        dispatch_listed(Types{}, d, [&](auto tag) {
            using T = typename decltype(tag)::type;
            launch(static_cast<const T*>(a.inputs[0]), static_cast<const T*>(a.inputs[1]), static_cast<T*>(a.output),
                   static_cast<int>(s.m()), static_cast<int>(s.n()), static_cast<int>(s.k()));
        });
    };
    t.reference_host = gemm_reference_host;
    t.reference_device = [](DType d, const Shape& s, const DeviceArgs& a, double* value, double* magnitude) {
        gemm_reference_device(d, a.inputs[0], a.inputs[1], static_cast<int>(s.m()), static_cast<int>(s.n()),
                              static_cast<int>(s.k()), value, magnitude);
    };
    return t;
}

// A generic lambda forwards to the student's template for the deduced type.
#define GEMM_LAUNCHER(fn) [](auto* a, auto* b, auto* c, int m, int n, int k) { fn(a, b, c, m, n, k); }

}  // namespace

Task make_matmul_naive_task() {
    return gemm_task<Types>("matmul_naive", "C = A·B, one thread per element of C, coalesced indexing", {},
                            {Shape::gemm(2048, 2048, 2048)}, GEMM_LAUNCHER(matmul_naive));
}

Task make_matmul_tiled_task() {
    return gemm_task<Types>("matmul_tiled", "C = A·B with shared-memory tiles, correct for any size",
                            {Shape::gemm(1024, 1024, 1024)}, {Shape::gemm(2048, 2048, 2048)},
                            GEMM_LAUNCHER(matmul_tiled));
}

Task make_matmul_fast_task() {
    return gemm_task<FastTypes>("matmul_fast", "the fastest float GEMM you can write (plain FP32)",
                                {Shape::gemm(1024, 1024, 1024), Shape::gemm(4095, 1031, 515),
                                 Shape::gemm(1025, 1025, 1025)},
                                {Shape::gemm(2048, 2048, 2048), Shape::gemm(4096, 4096, 4096)},
                                GEMM_LAUNCHER(matmul_fast));
}
