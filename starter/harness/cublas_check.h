// Checks a cuBLAS call (the message names the call, file and line), and an
// owned cuBLAS handle.
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

#define CUBLAS_CHECK(call)                                                                      \
    do {                                                                                        \
        const cublasStatus_t cublas_st_ = (call);                                               \
        if (cublas_st_ != CUBLAS_STATUS_SUCCESS)                                                \
            throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                     ": " #call " failed: " + cublasGetStatusString(cublas_st_)); \
    } while (0)

class CublasHandle {
public:
    CublasHandle() { CUBLAS_CHECK(cublasCreate(&h_)); }
    ~CublasHandle() { (void)cublasDestroy(h_); }
    CublasHandle(const CublasHandle&) = delete;
    CublasHandle& operator=(const CublasHandle&) = delete;
    cublasHandle_t get() const { return h_; }

private:
    cublasHandle_t h_{};
};
