#include "backend_budget.h"

namespace {

#ifdef CUDACPU_BACKEND
constexpr bool kOnCpu = true;
#else
constexpr bool kOnCpu = false;
#endif

constexpr double kCpuMaxElements = 2097152;  // 1031 x 977 runs; 2048 x 2048 is GPU only
constexpr double kCpuMaxMultiplyAdds = 3e8;  // 515 x 509 x 521 runs; 1000 x 999 x 1001 is GPU only

double work(const Shape& s) { return double(s.dims[0]) * double(s.dims[1]) * double(s.dims[2]); }

bool gemm(const Shape& s) { return s.kind == ShapeKind::gemm; }

std::string grouped(double n) {  // 300000000 -> "300,000,000"
    std::string digits = std::to_string(static_cast<long long>(n));
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
    return digits;
}

}  // namespace

bool runs_on_this_backend(const Shape& s) {
    return !kOnCpu || work(s) <= (gemm(s) ? kCpuMaxMultiplyAdds : kCpuMaxElements);
}

std::string gpu_only_message(const Shape& s) {
    const char* what = gemm(s) ? "multiply-adds" : "elements";
    const double budget = gemm(s) ? kCpuMaxMultiplyAdds : kCpuMaxElements;
    return "GPU only: " + s.str() + " is " + grouped(work(s)) + " " + what + ", over the CPU backend's per-case "
           "budget of " + grouped(budget) + "; not run on the CPU (a GPU run checks it)";
}
