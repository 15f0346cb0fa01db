#include <doctest/doctest.h>

#include <set>
#include <tuple>

#include "placement.h"

TEST_CASE("placements keep every array 16-byte aligned, in fact 256, and inside its slack") {
    for (std::uint64_t call = 0; call < 2000; ++call)
        for (std::uint64_t array = 0; array < 3; ++array) {
            const std::size_t off = placement_offset(12345, array, call);
            REQUIRE(off % 16 == 0);
            REQUIRE(off % kPlacementAlign == 0);
            REQUIRE(off <= kPlacementSlack);
        }
    CHECK(kPlacementAlign % 16 == 0);
    CHECK(kPlacementSlack == 4 * 1024 * 1024 - 256);
}

TEST_CASE("a placement is a pure function of seed, array and call") {
    CHECK(placement_offset(7, 1, 42) == placement_offset(7, 1, 42));
    int differ_by_call = 0, differ_by_array = 0, differ_by_seed = 0;
    for (std::uint64_t i = 0; i < 100; ++i) {
        differ_by_call += placement_offset(7, 0, i) != placement_offset(7, 0, i + 1);
        differ_by_array += placement_offset(7, 0, i) != placement_offset(7, 1, i);
        differ_by_seed += placement_offset(7, 0, i) != placement_offset(8, 0, i);
    }
    CHECK(differ_by_call >= 99);
    CHECK(differ_by_array >= 99);
    CHECK(differ_by_seed >= 99);
}

TEST_CASE("a case's calls almost never meet the same pointers twice") {
    // A timed case makes at most a few hundred calls; a cache keyed on all three
    // pointers of a matmul would practically never hit.
    std::set<std::tuple<std::size_t, std::size_t, std::size_t>> seen;
    std::set<std::size_t> outputs;
    const int calls = 1000;
    for (std::uint64_t call = 0; call < calls; ++call) {
        seen.insert({placement_offset(99, 0, call), placement_offset(99, 1, call), placement_offset(99, 2, call)});
        outputs.insert(placement_offset(99, 2, call));
    }
    CHECK(seen.size() == calls);
    CHECK(outputs.size() > calls - 60);  // ~ calls^2 / (2 * 16384) = 30 repeats expected for the output alone
}

TEST_CASE("placement streams never coincide with the input streams") {
    CHECK(kPlacementStream > 1000);
    CHECK(rng_key(5, kPlacementStream) != rng_key(5, 0));
}
