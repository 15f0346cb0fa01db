#include "transfers.h"

#include <cstring>
#include <memory>

#include "cuda_check.h"
#include "device_buffer.h"

namespace {

// Host memory of one kind, touched once so every page exists before timing.
class HostBuffer {
public:
    HostBuffer(std::size_t bytes, bool pinned) : pinned_(pinned) {
        if (pinned_) CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
        else ptr_ = new unsigned char[bytes];
        std::memset(ptr_, 1, bytes);
    }
    ~HostBuffer() {
        if (pinned_) (void)cudaFreeHost(ptr_);
        else delete[] static_cast<unsigned char*>(ptr_);
    }
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;
    void* get() const { return ptr_; }

private:
    bool pinned_;
    void* ptr_ = nullptr;
};

}  // namespace

std::vector<std::size_t> transfer_sizes(bool quick) {
    const std::size_t mib = std::size_t(1) << 20;
    if (quick) return {mib, 4 * mib};
    return {mib, 16 * mib, 256 * mib};
}

std::vector<TransferRow> measure_transfers(const std::vector<std::size_t>& sizes, const TimingOptions& options,
                                           L2Flusher& flusher) {
    std::vector<TransferRow> rows;
    for (bool pinned : {false, true})
        for (std::size_t bytes : sizes) {
            HostBuffer host(bytes, pinned);
            DeviceBuffer device(bytes);
            for (bool to_device : {true, false}) {
                const TimingResult t = time_launcher(
                    [&] {
                        if (to_device) CUDA_CHECK(cudaMemcpy(device.get(), host.get(), bytes, cudaMemcpyHostToDevice));
                        else CUDA_CHECK(cudaMemcpy(host.get(), device.get(), bytes, cudaMemcpyDeviceToHost));
                    },
                    [] {}, [](int) {}, options, flusher);
                TransferRow r;
                r.memory = pinned ? "pinned" : "pageable";
                r.direction = to_device ? "host-to-device" : "device-to-host";
                r.bytes = bytes;
                r.gbps = t.stats.median > 0 ? bytes / (t.stats.median * 1e-3) / 1e9 : 0;
                rows.push_back(r);
            }
        }
    return rows;
}
