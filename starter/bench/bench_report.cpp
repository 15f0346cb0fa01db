#include "bench_report.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace {

using nlohmann::json;

json number_or_null(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

void print_row(std::FILE* out, const BenchRow& r) {
    std::fprintf(out, "%-13s %-18s %-8s %-15s", r.task.c_str(), r.impl.c_str(), r.dtype.c_str(), r.shape.c_str());
    if (r.ms) std::fprintf(out, " %10.4f ms %12.1f %s", *r.ms, r.throughput.value_or(0), r.unit.c_str());
    std::fputc('\n', out);
    if (!r.note.empty()) std::fprintf(out, "    %s\n", r.note.c_str());
    std::fflush(out);
}

}  // namespace

BenchReport::BenchReport(std::string path, std::string label, std::string date, std::FILE* human)
    : path_(std::move(path)), label_(std::move(label)), date_(std::move(date)), human_(human) {}

void BenchReport::set_device(const BenchDevice& d) {
    std::lock_guard<std::mutex> lock(mu_);
    device_ = d;
}

void BenchReport::add(const BenchRow& row) {
    std::lock_guard<std::mutex> lock(mu_);
    rows_.push_back(row);
    print_row(human_, row);
}

void BenchReport::add(const TransferRow& t) {
    std::lock_guard<std::mutex> lock(mu_);
    transfers_.push_back(t);
    std::fprintf(human_, "transfer      %-9s %-15s %11zu bytes %8.1f GB/s\n", t.memory.c_str(), t.direction.c_str(),
                 t.bytes, t.gbps);
    std::fflush(human_);
}

void BenchReport::write() const {
    std::lock_guard<std::mutex> lock(mu_);
    json rows = json::array(), transfers = json::array();
    for (const BenchRow& r : rows_)
        rows.push_back({{"task", r.task},
                        {"impl", r.impl},
                        {"dtype", r.dtype},
                        {"shape", r.shape},
                        {"size", r.size},
                        {"ms", number_or_null(r.ms)},
                        {"throughput", number_or_null(r.throughput)},
                        {"unit", r.unit},
                        {"note", r.note}});
    for (const TransferRow& t : transfers_)
        transfers.push_back({{"memory", t.memory}, {"direction", t.direction}, {"bytes", t.bytes}, {"gbps", t.gbps}});
    const json doc = {{"device",
                       {{"name", device_.name},
                        {"sm_clock_mhz", device_.sm_clock_mhz > 0 ? json(device_.sm_clock_mhz) : json(nullptr)},
                        {"copy_gbps", device_.copy_gbps},
                        {"cublas_fp32_gflops", device_.cublas_fp32_gflops}}},
                      {"date", date_},
                      {"label", label_},
                      {"rows", rows},
                      {"transfers", transfers}};
    const std::string temporary = path_ + ".partial";
    {
        std::ofstream out(temporary);
        out << doc.dump(1) << "\n";
        if (!out.flush()) throw std::runtime_error("cannot write " + temporary);
    }
    if (std::rename(temporary.c_str(), path_.c_str()) != 0)
        throw std::runtime_error("cannot replace " + path_ + " with " + temporary);
}

std::string utc_now_iso() {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}
