#include <doctest/doctest.h>

#include "device_info.h"

TEST_CASE("a sample is throttled when a slowing reason is active and the clock is below its maximum") {
    CHECK(is_throttled(0x4, 1755, 1980));         // power cap, clock pulled down
    CHECK(is_throttled(0x20 | 0x1, 1500, 1980));  // software thermal
    CHECK_FALSE(is_throttled(0x4, 1980, 1980));   // capped, but the clock is still at its maximum
    CHECK_FALSE(is_throttled(0x1, 345, 1980));    // idle between samples is not throttling
    CHECK_FALSE(is_throttled(0x2 | 0x10 | 0x100, 1500, 1980));  // application clocks, sync boost, display
    CHECK(is_throttled(0x40, -1, -1));            // hardware thermal, clocks unknown: the reason decides
}
