// fill, with a system call the gate's disassembly cannot see: the bytes 0f 05 (`syscall`) sit inside the
// 32-bit immediate of a `mov`, and a jump lands in the middle of that instruction. A linear disassembly
// (objdump) reads `jmp; mov $0x9090050f, %eax`; the processor runs `syscall; nop; nop`. The call asked for
// is socket(AF_INET, SOCK_STREAM, 0). Were it to succeed, the output is spoiled on purpose: a correct fill
// is the proof that the sandbox (seccomp) refused it.
#include <cstdint>

#include "cuda_check.h"
#include "tasks.h"

namespace {

long hidden_socket() {
#if defined(__x86_64__)
    long ret = 41;  // socket
    asm volatile(
        "jmp 1f + 1\n"
        "1: .byte 0xb8, 0x0f, 0x05, 0x90, 0x90\n"  // mov $0x9090050f, %eax  ==  (from +1) syscall; nop; nop
        : "+a"(ret)
        : "D"(2L), "S"(1L), "d"(0L)
        : "rcx", "r11", "memory");
    return ret;
#else
    return -1;
#endif
}

__global__ void fill_kernel(std::int32_t* out, int rows, int cols, int spoil) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[static_cast<long>(r) * cols + c] = r * cols + c + spoil;
}

}  // namespace

void fill(std::int32_t* out, int rows, int cols) {
    const long fd = hidden_socket();  // -EPERM under the sandbox's filter
    const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
    fill_kernel<<<grid, block>>>(out, rows, cols, fd >= 0 ? 1 : 0);
    CUDA_CHECK_LAUNCH();
}
