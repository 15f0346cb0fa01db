// The harness's own GPU work: making inputs, poisoning outputs, comparing
// results with the float64 reference, checking inputs were left alone.
// Trusted code, linked only into the harness.
#pragma once

#include <cstddef>
#include <cstdint>

#include "counter_rng.h"
#include "dtype.h"
#include "registry.h"
#include "tolerance.h"

// Bit patterns written into every output before each run, so an element the
// kernel never wrote is caught: quiet NaNs for floats, and for int32 a large
// negative number no task can produce.
constexpr std::uint32_t kPoisonF32 = 0x7FC0FFEEu;
constexpr std::uint64_t kPoisonF64 = 0x7FF8DEADBEEFCAFEull;
constexpr std::int32_t kPoisonI32 = -2147476563;  // INT32_MIN + 0x1BAD

// Widths of the edge tiles the comparison counts wrong elements in, for the
// bounds hint: 16, 32, 64 and 128.
constexpr int kEdgeTileCount = 4;
HOST_DEVICE constexpr int edge_tile(int i) { return 16 << i; }

struct CompareSummary {
    unsigned long long wrong = 0;      // outside the tolerance, or not finite
    unsigned long long unwritten = 0;  // still bit-equal to the poison
    unsigned long long nonfinite = 0;
    unsigned long long first_wrong = ~0ull;  // smallest flat index of a wrong element
    unsigned long long wrong_in_edge[kEdgeTileCount] = {};  // wrong and in the last partial tile
    unsigned long long matches_transposed = 0;  // square outputs: elements equal to ref^T
    double worst_ratio = 0;  // max |got - ref| / bound (bound 0: +inf on any difference)
    double ratio_sum = 0;    // sum of |got - ref| / bound, for the statistical rule (tolerance.h)
};

// Input stream `key` (counter_rng.h); int_bound is B there (int32 only).
void generate_on_device(DType t, void* out, std::size_t n, std::uint64_t key, Distribution d, std::int64_t int_bound);
void poison_on_device(DType t, void* out, std::size_t n);
// Turns magnitudes into tolerance bounds in place (tolerance.h).
void bounds_on_device(double* magnitude_in_bound_out, std::size_t n, Tolerance tol, double k_terms, double u,
                      double tiny);
// `analyze` also fills the hint counters (edge tiles, transposition); it reads
// the reference out of order, so the timed runs' checks skip it.
CompareSummary compare_on_device(DType t, const void* out, const double* ref, const double* bound,
                                 OutputLayout layout, bool analyze);
bool equal_on_device(const void* a, const void* b, std::size_t bytes);
// How many of elements [begin, end) of an array of type t no longer hold the poison.
std::size_t count_not_poison(DType t, const void* array, std::size_t begin, std::size_t end);
// out[i] = (double)in[i], or |in[i]| when `absolute`.
void to_double_on_device(DType t, const void* in, double* out, std::size_t n, bool absolute);
// One element of an array of type t, as a double.
double read_element_as_double(DType t, const void* device_array, std::size_t index);
