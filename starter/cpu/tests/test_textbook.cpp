// Textbook kernels (tests/kernels/textbook.cu) compute the right answers on
// the CPU backend: naive, shared-memory tiled and register-blocked matrix
// multiply, a padded-tile transpose, and dot products by a shared-memory
// tree and by warp shuffles.
#include <cuda_runtime.h>

#include <vector>

#include "kernels/textbook.h"
#include "support.h"

namespace {

const int kShapes[][3] = {{1, 1, 1}, {16, 16, 16}, {17, 31, 9}, {64, 64, 64}, {65, 63, 130}, {100, 3, 257}, {3, 200, 5}};

void check(const char* what, void (*launch)(const float*, const float*, float*, int, int, int)) {
    for (const auto& s : kShapes) {
        const int m = s[0], n = s[1], k = s[2];
        const auto a = random_values<float>(std::size_t(m) * k, 11), b = random_values<float>(std::size_t(k) * n, 12);
        DeviceArray<float> da(a, "a"), db(b, "b"), dc(std::size_t(m) * n, "c");
        dc.poison();
        launch(da.get(), db.get(), dc.get(), m, n, k);
        REQUIRE(cudaGetLastError() == cudaSuccess);
        std::vector<double> want, magnitude;
        matmul_reference(a, b, m, n, k, &want, &magnitude);
        CHECK_MESSAGE(count_wrong(dc.download(), want, magnitude) == 0, what << " " << m << "x" << n << "x" << k);
    }
}

}  // namespace

TEST_CASE("textbook naive matmul") { check("naive", textbook::matmul_naive); }
TEST_CASE("textbook shared-memory tiled matmul") { check("shared", textbook::matmul_shared); }
TEST_CASE("textbook register-blocked 2D matmul") { check("register-blocked", textbook::matmul_register_blocked); }

TEST_CASE("textbook transpose through a padded tile") {
    for (const auto& s : {std::pair<int, int>{1, 1}, {32, 32}, {33, 65}, {100, 7}, {7, 100}}) {
        const auto in = random_values<float>(std::size_t(s.first) * s.second, 13);
        DeviceArray<float> din(in, "in"), dout(in.size(), "out");
        dout.poison();
        textbook::transpose_padded(din.get(), dout.get(), s.first, s.second);
        const auto out = dout.download();
        std::size_t wrong = 0;
        for (int r = 0; r < s.first; ++r)
            for (int c = 0; c < s.second; ++c) wrong += out[std::size_t(c) * s.first + r] != in[std::size_t(r) * s.second + c];
        CHECK_MESSAGE(wrong == 0, s.first << "x" << s.second);
    }
}

TEST_CASE("textbook dot products: shared-memory tree and warp shuffles") {
    for (int n : {1, 31, 32, 33, 1000, 100000}) {
        const auto x = random_values<float>(n, 14), y = random_values<float>(n, 15);
        DeviceArray<float> dx(x, "x"), dy(y, "y"), r(1, "result");
        double want = 0, magnitude = 0;
        for (int i = 0; i < n; ++i) {
            want += double(x[i]) * y[i];
            magnitude += std::fabs(double(x[i]) * y[i]);
        }
        for (auto launch : {textbook::dot_shared_tree, textbook::dot_warp_shuffle}) {
            r.poison();
            launch(dx.get(), dy.get(), r.get(), n);
            REQUIRE(cudaGetLastError() == cudaSuccess);
            CHECK(std::fabs(r.download()[0] - want) <= 1e-5 * magnitude + 1e-6);
        }
    }
}
