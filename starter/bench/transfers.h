// Host-device copies over PCIe (or NVLink-C2C), from pageable memory (plain
// malloc/new: the driver first copies it into a pinned staging buffer) and from
// pinned memory (cudaMallocHost: the GPU reads it directly), both directions.
#pragma once

#include <cstddef>
#include <vector>

#include "bench_report.h"
#include "timing.h"

std::vector<std::size_t> transfer_sizes(bool quick);  // bytes: 1, 16, 256 MiB (quick: 1, 4 MiB)

// Times a cudaMemcpy of each size for each kind of memory and direction, with
// the harness's timing loop; one row per measurement.
std::vector<TransferRow> measure_transfers(const std::vector<std::size_t>& sizes, const TimingOptions& options,
                                           L2Flusher& flusher);
