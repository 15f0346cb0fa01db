#include "errors.h"

#include <atomic>

namespace cudacpu {

namespace {

struct ErrorText {
    int value;
    const char* name;
    const char* text;
};

constexpr ErrorText kErrors[] = {
#include "error_strings.inc"
};

thread_local cudaError_t t_last_error = cudaSuccess;
std::atomic<int> g_sticky_error{cudaSuccess};

const ErrorText* find(cudaError_t e) {
    for (const ErrorText& t : kErrors)
        if (t.value == static_cast<int>(e)) return &t;
    return nullptr;
}

}  // namespace

cudaError_t record(cudaError_t e) {
    if (e != cudaSuccess) t_last_error = e;
    return e;
}

cudaError_t sticky_error() { return static_cast<cudaError_t>(g_sticky_error.load()); }

void set_sticky_error(cudaError_t e) {
    int expected = cudaSuccess;
    g_sticky_error.compare_exchange_strong(expected, e);
}

bool is_sticky(cudaError_t e) {
    switch (e) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorLaunchTimeout:
        case cudaErrorAssert:
        case cudaErrorMisalignedAddress:
        case cudaErrorIllegalInstruction:
        case cudaErrorHardwareStackError:
            return true;
        default:
            return false;
    }
}

}  // namespace cudacpu

using cudacpu::sticky_error;

extern "C" {

cudaError_t cudaGetLastError(void) {
    const cudaError_t sticky = sticky_error();
    if (sticky != cudaSuccess) return sticky;
    const cudaError_t e = cudacpu::t_last_error;
    cudacpu::t_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) {
    const cudaError_t sticky = sticky_error();
    return sticky != cudaSuccess ? sticky : cudacpu::t_last_error;
}

const char* cudaGetErrorString(cudaError_t error) {
    const auto* t = cudacpu::find(error);
    return t ? t->text : "unrecognized error code";
}

const char* cudaGetErrorName(cudaError_t error) {
    const auto* t = cudacpu::find(error);
    return t ? t->name : "cudaErrorUnknown";
}

cudaError_t cudacpu_clear_sticky_error(void) {
    const cudaError_t e = static_cast<cudaError_t>(cudacpu::g_sticky_error.exchange(cudaSuccess));
    cudacpu::t_last_error = cudaSuccess;
    return e;
}
}
