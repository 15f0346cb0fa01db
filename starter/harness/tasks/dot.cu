// dot: *result = sum x_i y_i, a block reduction in shared memory.
#include "../reference_gpu.h"
#include "../registry.h"
#include "cuda_check.h"
#include "shape_sets.h"
#include "tasks.h"

namespace {

std::vector<Shape> vectors(std::initializer_list<std::int64_t> ns) {
    std::vector<Shape> v;
    for (auto n : ns) v.push_back(Shape::vector(n));
    return v;
}

}  // namespace

Task make_dot_task() {
    Task t;
    t.id = "dot";
    t.summary = "dot product with a shared-memory block reduction, result in a device float";
    t.file = "dot.cu";
    t.shape_kind = ShapeKind::vector;
    t.dtypes = {DType::f32};
    // Positive inputs keep the sum well conditioned (sum |x y| = |sum x y|), so
    // the tolerance is a relative one; see tolerance.h for the sqrt(n) model.
    t.tolerance = {ToleranceModel::sqrt_k, 8};
    t.distribution = Distribution::positive_unit;
    t.metric = Metric::gbps;
    // Graded: one and two elements, lengths just past a power of two (a last block
    // that is almost empty), 2^24; make test adds lengths just below and above
    // powers of two, and the largest input a call may get (2^28, as timed).
    t.shapes.graded = vectors({1, 2, 1000, 1025, 1048577, 1 << 24});
    t.shapes.test = graded_and(t.shapes.graded, vectors({31, 1023, 65537, 1048579, 1 << 28}));
    t.shapes.timed = vectors({1 << 28});
    t.shapes.sanitize = vectors({1025});
    t.shapes.profile = vectors({1 << 20});
    t.shapes.sweep = sweep_shapes_of(ShapeKind::vector);
    t.shapes.data = vectors({1, 37, 1000});
    t.input_names = {"x", "y"};
    t.input_elements = [](const Shape& s) {
        return std::vector<std::size_t>{static_cast<std::size_t>(s.n()), static_cast<std::size_t>(s.n())};
    };
    t.output_layout = [](const Shape&) { return OutputLayout{1, 1}; };
    t.terms_summed = [](const Shape& s) { return static_cast<double>(s.n()); };
    t.flops = [](const Shape& s) { return 2.0 * s.n(); };
    t.min_bytes = [](const Shape& s, DType) { return 8.0 * s.n() + 4; };
    t.launch = [](DType, const Shape& s, const DeviceArgs& a) {
        dot(static_cast<const float*>(a.inputs[0]), static_cast<const float*>(a.inputs[1]),
            static_cast<float*>(a.output), static_cast<int>(s.n()));
    };
    t.reference_host = [](const Shape&, const std::vector<std::vector<double>>& in) {
        HostReference r;
        r.value = {0.0};
        r.magnitude = {0.0};
        for (std::size_t i = 0; i < in[0].size(); ++i) {
            r.value[0] += in[0][i] * in[1][i];
            r.magnitude[0] += std::fabs(in[0][i] * in[1][i]);
        }
        return r;
    };
    t.reference_device = [](DType, const Shape& s, const DeviceArgs& a, double* value, double* magnitude) {
        dot_reference_device(static_cast<const float*>(a.inputs[0]), static_cast<const float*>(a.inputs[1]),
                             static_cast<std::size_t>(s.n()), value, magnitude);
    };
    return t;
}
