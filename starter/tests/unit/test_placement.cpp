#include <doctest/doctest.h>

#include <set>
#include <tuple>
#include <vector>

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

TEST_CASE("compute-sanitizer's placement gives every input and the output an allocation of exactly its size") {
    // dot at 1025: inputs x and y, a one-element output.
    const CaseAllocations a = case_allocations(Placement::exact, {1025, 1025}, 1, sizeof(float));
    CHECK(a.inputs == std::vector<std::size_t>{1025 * sizeof(float), 1025 * sizeof(float)});
    CHECK(a.output == sizeof(float));  // no guard region after it: an overrun leaves the allocation
    CHECK(a.guard == 0);
    CHECK(a.slack == 0);
    for (std::uint64_t call = 0; call < 100; ++call)
        for (std::uint64_t array = 0; array < 3; ++array) CHECK(array_offset(Placement::exact, 77, array, call) == 0);
}

TEST_CASE("the sanitizer's flag makes a stored case exact too; without it a stored output keeps its guard region") {
    CHECK(placement_for(true, false) == Placement::exact);
    CHECK(placement_for(true, true) == Placement::exact);
    CHECK(placement_for(false, true) == Placement::stored);
    CHECK(placement_for(false, false) == Placement::fresh);
    const CaseAllocations stored = case_allocations(Placement::stored, {37 * 211, 37 * 211}, 37 * 211, 8);
    CHECK(stored.inputs == std::vector<std::size_t>{37 * 211 * 8, 37 * 211 * 8});
    CHECK(stored.guard == 1 << 14);
    CHECK(stored.output == (37 * 211 + stored.guard) * 8);
    CHECK(array_offset(Placement::stored, 77, 1, 5) == 0);
}

TEST_CASE("fresh placement leaves room for every offset and a guard region after the output") {
    const CaseAllocations a = case_allocations(Placement::fresh, {1000}, 1000, 4);
    CHECK(a.slack == kPlacementSlack);
    CHECK(a.inputs == std::vector<std::size_t>{4000 + kPlacementSlack});
    CHECK(a.output == (1000 + a.guard) * 4 + kPlacementSlack);
    CHECK(a.guard == guard_elements(Placement::fresh, 1000));
    CHECK(guard_elements(Placement::fresh, 1) == 1 << 14);
    CHECK(guard_elements(Placement::fresh, std::size_t(1) << 30) == 1 << 22);
    CHECK(array_offset(Placement::fresh, 77, 1, 5) == placement_offset(77, 1, 5));
}
