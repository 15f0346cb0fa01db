// Prints the probe's answers, with the device they came from (for h100.txt).
#include <cuda_runtime.h>

#include <cstdio>

#include "probe.h"

int main() {
    cudaDeviceProp p{};
    int runtime = 0;
    cudaGetDeviceProperties(&p, 0);
    cudaRuntimeGetVersion(&runtime);
    std::printf("# device: %s, sm_%d%d, CUDA runtime %d\n", p.name, p.major, p.minor, runtime);
    std::fputs(gpu_probe().c_str(), stdout);
    return 0;
}
