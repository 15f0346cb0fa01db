// Probe for the sandbox's seccomp profiles on a real GPU: ok | oob | detach
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>
__global__ void fill(int* p, int n, int extra) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n + extra) p[i] = i; }
int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "ok";
    int* d = nullptr; const int n = 1 << 20;
    if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess) { std::printf("cudaMalloc failed\n"); return 2; }
    int extra = std::strcmp(mode, "oob") == 0 ? 64 : 0;
    std::thread t([&] { fill<<<(n + extra + 255) / 256, 256>>>(d, n, extra); cudaDeviceSynchronize(); });
    t.join();
    int h = 0; cudaMemcpy(&h, d + 12345, sizeof h, cudaMemcpyDeviceToHost);
    std::printf("value %d %s\n", h, cudaGetErrorString(cudaGetLastError()));
    if (std::strcmp(mode, "detach") == 0) {
        pid_t pid = fork();
        if (pid == 0) { setsid(); if (fork() == 0) { sleep(30); _exit(0); } _exit(0); }
        std::printf("fork returned %d\n", (int)pid);
    }
    std::fflush(stdout);
    return 0;
}
