// The reference solution's kernels (solution/kernels/*.cu, compiled unchanged
// by cudacpu.py) give the right answer on the CPU backend, at shapes that are
// and are not tile multiples, including 70000 x 3 and 3 x 70000, and through
// both the vectorized and the scalar paths (16-byte aligned or not).
#include <cstdint>
#include <vector>

#include "support.h"
#include "tasks.h"

namespace {

struct MatrixShape {
    int rows, cols;
};
const MatrixShape kMatrixShapes[] = {{1, 1}, {1, 257}, {257, 1}, {17, 33}, {33, 17}, {64, 64},
                                     {127, 129}, {70000, 3}, {3, 70000}, {999, 1001}};

struct GemmShape {
    int m, n, k;
};
const GemmShape kGemmShapes[] = {{1, 1, 1},    {1, 300, 7}, {300, 1, 5},   {17, 33, 29},
                                 {64, 64, 64}, {63, 65, 127}, {129, 257, 33}};
// Tall, wide and deep: many blocks of mostly idle threads, or one block that loops long.
const GemmShape kExtremeGemmShapes[] = {{70000, 3, 4}, {3, 70000, 4}, {5, 3, 70000}};

template <class T>
void check_add(int rows, int cols, bool aligned) {
    const std::size_t n = static_cast<std::size_t>(rows) * cols, off = aligned ? 0 : 1;
    const auto a = random_values<T>(n, 1), b = random_values<T>(n, 2);
    DeviceArray<T> da(n + off, "a"), db(n + off, "b"), dc(n + off, "c");
    std::vector<T> pa(n + off), pb(n + off);
    std::copy(a.begin(), a.end(), pa.begin() + off);
    std::copy(b.begin(), b.end(), pb.begin() + off);
    da.upload(pa);
    db.upload(pb);
    dc.poison();
    add<T>(da.get() + off, db.get() + off, dc.get() + off, rows, cols);
    const auto c = dc.download();
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += c[i + off] != a[i] + b[i];
    CHECK_MESSAGE(wrong == 0, "add " << rows << "x" << cols << (aligned ? "" : " misaligned"));
}

template <class T>
void check_transpose(int rows, int cols) {
    const std::size_t n = static_cast<std::size_t>(rows) * cols;
    const auto in = random_values<T>(n, 3);
    DeviceArray<T> din(in, "in"), dout(n, "out");
    dout.poison();
    transpose<T>(din.get(), dout.get(), rows, cols);
    const auto out = dout.download();
    std::size_t wrong = 0;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            wrong += out[static_cast<std::size_t>(c) * rows + r] != in[static_cast<std::size_t>(r) * cols + c];
    CHECK_MESSAGE(wrong == 0, "transpose " << rows << "x" << cols);
}

template <class T, class Launcher>
void check_matmul(const char* what, Launcher launch, const GemmShape& s) {
    const auto a = random_values<T>(static_cast<std::size_t>(s.m) * s.k, 4);
    const auto b = random_values<T>(static_cast<std::size_t>(s.k) * s.n, 5);
    DeviceArray<T> da(a, "a"), db(b, "b"), dc(static_cast<std::size_t>(s.m) * s.n, "c");
    dc.poison();
    launch(da.get(), db.get(), dc.get(), s.m, s.n, s.k);
    std::vector<double> want, magnitude;
    matmul_reference(a, b, s.m, s.n, s.k, &want, &magnitude);
    CHECK_MESSAGE(count_wrong(dc.download(), want, magnitude) == 0, what << " " << s.m << "x" << s.n << "x" << s.k);
}

}  // namespace

TEST_CASE("fill writes r*cols + c at every shape") {
    for (const auto& s : kMatrixShapes) {
        const std::size_t n = static_cast<std::size_t>(s.rows) * s.cols;
        DeviceArray<std::int32_t> out(n, "out");
        out.poison();
        fill(out.get(), s.rows, s.cols);
        const auto got = out.download();
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < n; ++i) wrong += got[i] != static_cast<std::int32_t>(i);
        CHECK_MESSAGE(wrong == 0, "fill " << s.rows << "x" << s.cols);
    }
}

TEST_CASE("add is exact for float and int32, aligned and misaligned") {
    for (const auto& s : kMatrixShapes) {
        check_add<float>(s.rows, s.cols, true);
        check_add<std::int32_t>(s.rows, s.cols, true);
    }
    check_add<float>(17, 33, false);
    check_add<std::int32_t>(70000, 3, false);
}

TEST_CASE("transpose moves every element, float and int32") {
    for (const auto& s : kMatrixShapes) {
        check_transpose<float>(s.rows, s.cols);
        check_transpose<std::int32_t>(s.rows, s.cols);
    }
}

TEST_CASE("matmul_naive matches a float64 reference for float, double and int32") {
    for (const auto& s : kGemmShapes) {
        check_matmul<float>("matmul_naive<float>", matmul_naive<float>, s);
        check_matmul<double>("matmul_naive<double>", matmul_naive<double>, s);
        check_matmul<std::int32_t>("matmul_naive<int32>", matmul_naive<std::int32_t>, s);
    }
    for (const auto& s : kExtremeGemmShapes) check_matmul<float>("matmul_naive<float>", matmul_naive<float>, s);
}

TEST_CASE("matmul_tiled matches a float64 reference, also where sizes are not multiples of 32") {
    for (const auto& s : kGemmShapes) {
        check_matmul<float>("matmul_tiled<float>", matmul_tiled<float>, s);
        check_matmul<double>("matmul_tiled<double>", matmul_tiled<double>, s);
        check_matmul<std::int32_t>("matmul_tiled<int32>", matmul_tiled<std::int32_t>, s);
    }
    for (const auto& s : kExtremeGemmShapes) check_matmul<float>("matmul_tiled<float>", matmul_tiled<float>, s);
}

TEST_CASE("dot sets *result and sums within float tolerance, aligned and misaligned") {
    for (int n : {1, 3, 1000, 4099, (1 << 20) + 3}) {
        for (std::size_t off : {0, 1}) {
            const auto x = random_values<float>(n + off, 6), y = random_values<float>(n + off, 7);
            DeviceArray<float> dx(x, "x"), dy(y, "y"), r(1, "result");
            r.poison();
            dot(dx.get() + off, dy.get() + off, r.get(), n);
            double want = 0, magnitude = 0;
            for (int i = 0; i < n; ++i) {
                want += double(x[i + off]) * y[i + off];
                magnitude += std::fabs(double(x[i + off]) * y[i + off]);
            }
            const float got = r.download()[0];
            CHECK_MESSAGE(std::fabs(got - want) <= 1e-5 * magnitude + 1e-6, "dot n=" << n << " offset " << off);
        }
    }
}
