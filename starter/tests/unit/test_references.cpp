// The CPU float64 references against the stored cases of data/, which numpy
// computed independently (exactly rounded sums): the two must agree within
// the tolerance model, and exactly for integer and exact tasks.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "data_dir.h"
#include "data_manifest.h"
#include "npy.h"

TEST_CASE("every task's CPU reference agrees with data/ on every stored case") {
    const auto cases = read_manifest(test_data_dir());
    std::set<std::string> tasks_seen;
    for (const ManifestCase& c : cases) {
        const std::string dir = test_data_dir() + "/" + c.dir + "/";
        std::vector<std::vector<double>> inputs;
        for (const std::string& name : c.task->input_names) inputs.push_back(read_npy(dir + name + ".npy").to_doubles());
        const std::vector<double> expected = read_npy(dir + "expected.npy").to_doubles();
        const HostReference ref = c.task->reference_host(c.shape, inputs);
        REQUIRE(ref.value.size() == expected.size());
        const double u = unit_roundoff(c.dtype), k = c.task->terms_summed(c.shape);
        for (std::size_t i = 0; i < expected.size(); ++i) {
            // The stored value was rounded to the element type: allow that rounding too.
            const double bound = tolerance_bound(c.task->tolerance, k, u, ref.magnitude[i], smallest_normal(c.dtype)) +
                                 u * std::fabs(expected[i]);
            INFO(c.dir << " element " << i << ": reference " << ref.value[i] << ", stored " << expected[i]);
            REQUIRE(within_tolerance(ref.value[i], expected[i], bound));
            if (dtype_is_integer(c.dtype) || c.task->tolerance.model == ToleranceModel::exact)
                REQUIRE(ref.value[i] == expected[i]);
        }
        tasks_seen.insert(c.task->id);
    }
    CHECK(tasks_seen.size() == all_tasks().size());
}

TEST_CASE("the CPU matmul reference is exact on a hand-computed case") {
    const Task& t = *find_task("matmul_tiled");
    // [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50]
    const HostReference r = t.reference_host(Shape::gemm(2, 2, 2), {{1, 2, 3, 4}, {5, 6, 7, 8}});
    CHECK(r.value == std::vector<double>{19, 22, 43, 50});
    CHECK(r.magnitude == std::vector<double>{19, 22, 43, 50});
    const HostReference s = t.reference_host(Shape::gemm(1, 1, 2), {{1, -2}, {3, 4}});
    CHECK(s.value == std::vector<double>{-5});
    CHECK(s.magnitude == std::vector<double>{11});
}

TEST_CASE("the CPU transpose reference moves (r, c) to (c, r)") {
    const HostReference r = find_task("transpose")->reference_host(Shape::matrix(2, 3), {{1, 2, 3, 4, 5, 6}});
    CHECK(r.value == std::vector<double>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("the CPU dot reference sums products and their magnitudes") {
    const HostReference r = find_task("dot")->reference_host(Shape::vector(3), {{1, 2, 3}, {4, -5, 6}});
    CHECK(r.value == std::vector<double>{12});
    CHECK(r.magnitude == std::vector<double>{32});
}
