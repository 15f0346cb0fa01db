#include "launch_state.h"

#include <cstdio>
#include <cstring>

namespace cudacpu {

std::string LaunchState::kernel_name() const {
    if (id.name) return id.name;
    return site.kernel ? site.kernel : "kernel";
}

std::string LaunchState::describe() const {
    return "kernel " + kernel_name() + " (launched at " + where(Site{site.file, site.line}) + ")";
}

void LaunchState::fail(cudaError_t e, const std::string& message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_ == cudaSuccess) {
        error_ = e;
        message_ = message;
    }
    failed.store(true);
}

cudaError_t LaunchState::error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
}

std::string LaunchState::message() const {
    std::lock_guard<std::mutex> lock(mu_);
    return message_;
}

std::string coords(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

std::string coords(dim3 v) { return coords(uint3{v.x, v.y, v.z}); }

std::string where(Site s) {
    if (!s.file) return "an unknown place";
    const char* slash = std::strrchr(s.file, '/');
    return std::string(slash ? slash + 1 : s.file) + ":" + std::to_string(s.line);
}

bool same_site(Site a, Site b) {
    return a.line == b.line && (a.file == b.file || (a.file && b.file && std::strcmp(a.file, b.file) == 0));
}

std::string hex(unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

}  // namespace cudacpu
