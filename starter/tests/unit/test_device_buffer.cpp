#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <string>

#include "device_buffer.h"

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a case whose arrays no longer fit says whose memory it probably was, not the harness's file") {
    const std::string s = allocation_failure_message(4000, cudaErrorMemoryAllocation, "harness/device_buffer.h", 33);
    CHECK(s.rfind("the harness could not allocate 4000 bytes on the GPU for this case: ", 0) == 0);
    CHECK(contains(s, "(cudaErrorMemoryAllocation)"));
    CHECK(contains(s, "must be freed (cudaFree) before your function returns"));
    CHECK(contains(s, "[harness/device_buffer.h:33]"));  // where, for whoever maintains the harness
}

TEST_CASE("any other allocation error is named as it is, without the advice about freeing") {
    const std::string s = allocation_failure_message(64, cudaErrorInvalidValue, "harness/device_buffer.h", 33);
    CHECK(contains(s, "(cudaErrorInvalidValue)"));
    CHECK(!contains(s, "cudaFree"));
}
