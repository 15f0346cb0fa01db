// Atomics from many blocks running on several workers at once give exact
// totals; schedules change the order of a block's threads, and a seeded
// random schedule gives the same order (and so the same result of a racy
// kernel) every time.
#include <cstdint>
#include <set>
#include <vector>

#include "support.h"

namespace {

__global__ void count_everything(unsigned long long* total, int* ints, unsigned* bits, float* fsum, double* dsum,
                                 int* imax, unsigned* umin, unsigned* ring, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(total, 1ull);
    atomicAdd(ints, 1);
    atomicSub(ints + 1, 2);
    atomicOr(bits, 1u << (i % 32));
    atomicXor(bits + 1, 1u << (i % 32));
    atomicAnd(bits + 2, ~(1u << (i % 32)));
    atomicAdd(fsum, 1.0f);
    atomicAdd(dsum, 0.5);
    atomicMax(imax, i);
    atomicMin(umin, static_cast<unsigned>(i));
    atomicInc(ring, 999u);
}

// A spin lock built from atomicCAS/atomicExch guards a plain counter.
__global__ void locked_increment(int* lock, int* counter) {
    if (threadIdx.x != 0) return;
    while (atomicCAS(lock, 0, 1) != 0) {
    }
    __threadfence();
    *counter += 1;
    __threadfence();
    atomicExch(lock, 0);
}

// Each thread records when it ran, relative to the others of its block.
__global__ void record_order(int* order, int* next) {
    order[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(next + blockIdx.x, 1);
}

// Shared-memory race on purpose: no barrier between the write and the read.
__global__ void racy_shift(const int* in, int* out) {
    __shared__ int s[128];
    s[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
    out[blockIdx.x * 128 + threadIdx.x] = s[(threadIdx.x + 1) % 128];
}

// A common mistake: block 0 zeroes the total the other blocks add into.
__global__ void zero_in_block_zero(int* total) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *total = 0;
    __syncthreads();
    atomicAdd(total, 1);
}

std::vector<int> run_racy(const char* schedule) {
    ScheduleScope scope(schedule);
    std::vector<int> in(128 * 8);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i);
    DeviceArray<int> din(in, "in"), dout(in.size(), "out");
    racy_shift<<<8, 128>>>(din.get(), dout.get());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    return dout.download();
}

}  // namespace

TEST_CASE("atomics from a million threads on four workers give exact results") {
    const int workers = cudacpu_workers();
    cudacpu_set_workers(4);
    const int n = 1 << 20;
    DeviceArray<unsigned long long> total(1, "total");
    DeviceArray<int> ints(2, "ints"), imax(1, "imax");
    DeviceArray<unsigned> bits(3, "bits"), umin(1, "umin"), ring(1, "ring");
    DeviceArray<float> fsum(1, "fsum");
    DeviceArray<double> dsum(1, "dsum");
    total.upload({0});
    ints.upload({0, 0});
    imax.upload({-1});
    bits.upload({0u, 0u, 0xffffffffu});
    umin.upload({0xffffffffu});
    ring.upload({0u});
    fsum.upload({0.0f});
    dsum.upload({0.0});
    count_everything<<<n / 256, 256>>>(total.get(), ints.get(), bits.get(), fsum.get(), dsum.get(), imax.get(),
                                       umin.get(), ring.get(), n);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    cudacpu_set_workers(workers);
    CHECK(total.download()[0] == static_cast<unsigned long long>(n));
    CHECK(ints.download() == std::vector<int>{n, -2 * n});
    CHECK(bits.download() == std::vector<unsigned>{0xffffffffu, 0u, 0u});  // n/32 flips of each bit: even
    CHECK(fsum.download()[0] == static_cast<float>(n));                      // exact below 2^24
    CHECK(dsum.download()[0] == 0.5 * n);
    CHECK(imax.download()[0] == n - 1);
    CHECK(umin.download()[0] == 0u);
    CHECK(ring.download()[0] == static_cast<unsigned>(n % 1000));
}

TEST_CASE("a spin lock made of atomicCAS and atomicExch serializes blocks on several workers") {
    const int workers = cudacpu_workers();
    cudacpu_set_workers(4);
    DeviceArray<int> lock(1, "lock"), counter(1, "counter");
    lock.upload({0});
    counter.upload({0});
    locked_increment<<<2000, 32>>>(lock.get(), counter.get());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    cudacpu_set_workers(workers);
    CHECK(counter.download()[0] == 2000);
}

TEST_CASE("schedules: default runs thread 0 first, reverse the last first, random:SEED a shuffle") {
    const int blocks = 3, threads = 64;
    auto order = [&](const char* schedule) {
        ScheduleScope scope(schedule);
        DeviceArray<int> out(blocks * threads, "order"), next(blocks, "next");
        next.upload(std::vector<int>(blocks, 0));
        record_order<<<blocks, threads>>>(out.get(), next.get());
        REQUIRE(cudaGetLastError() == cudaSuccess);
        return out.download();
    };
    const auto by_default = order("default"), reversed = order("reverse");
    for (int t = 0; t < threads; ++t) {
        CHECK(by_default[t] == t);
        CHECK(reversed[t] == threads - 1 - t);
    }
    const auto a = order("random:7"), b = order("random:7"), c = order("random:8");
    CHECK(a == b);
    CHECK(a != c);
    CHECK(std::set<int>(a.begin(), a.begin() + threads).size() == static_cast<std::size_t>(threads));
    CHECK(a != by_default);
}

TEST_CASE("a shared-memory race gives different results under different schedules, the same under one seed") {
    const auto def = run_racy("default"), rev = run_racy("reverse");
    const auto r1 = run_racy("random:1"), r1_again = run_racy("random:1"), r2 = run_racy("random:2");
    CHECK(def != rev);
    CHECK(r1 == r1_again);
    CHECK(r1 != r2);
}

TEST_CASE("reverse and random schedules also change block order: zeroing in block 0 is caught") {
    DeviceArray<int> total(1, "total");
    auto run = [&](const char* schedule) {
        ScheduleScope scope(schedule);
        const int workers = cudacpu_workers();
        cudacpu_set_workers(1);  // one worker: the order is the schedule's alone
        total.upload({12345});
        zero_in_block_zero<<<64, 32>>>(total.get());
        cudacpu_set_workers(workers);
        REQUIRE(cudaGetLastError() == cudaSuccess);
        return total.download()[0];
    };
    CHECK(run("default") == 64 * 32);  // block 0 happened to go first
    CHECK(run("reverse") == 32);       // it went last: only its own additions remain
    CHECK(run("random:3") != 64 * 32);
}

TEST_CASE("an unknown schedule is refused and leaves the schedule as it was") {
    REQUIRE(cudacpu_set_schedule("reverse") == 0);
    CHECK(cudacpu_set_schedule("sideways") == -1);
    CHECK(cudacpu_set_schedule("random:x") == -1);
    CHECK(std::string(cudacpu_schedule()) == "reverse");
    REQUIRE(cudacpu_set_schedule("default") == 0);
}
