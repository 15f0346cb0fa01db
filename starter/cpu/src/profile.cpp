// Performance counters of a launch, from every access of every thread.
//
// A GPU runs the 32 threads of a warp together: one load instruction of a
// warp is one request to the memory system, carrying the addresses of all
// lanes that execute it. The CPU backend runs the lanes one after another,
// so the warp's instruction is rebuilt: between two points where a warp's
// lanes are together again (a __syncthreads(), or all of them returned), the
// k-th time lane A executes an access instruction and the k-th time lane B
// executes the same instruction are the same warp-level instruction. The lanes
// that executed it are its active lanes; the others were masked off
// (divergence).
//
// For each warp-level instruction:
//   - global memory: one request, touching the distinct 32-byte sectors of
//     its lanes' bytes; the ideal is the sectors those bytes fill when packed
//     (a warp reading 32 consecutive floats: 4 sectors, ideal 4; a warp
//     reading a column of a row-major matrix: 32 sectors, ideal 4);
//   - shared memory: 32 banks of 4-byte words. The lanes are served in
//     phases of 128 bytes (all 32 lanes for 4-byte accesses, half-warps for
//     8-byte, quarter-warps for 16-byte). A phase takes as many passes
//     (wavefronts) as the most distinct words any one bank holds; lanes
//     reading the same word share it (broadcast). Extra passes are bank
//     conflicts.
// The pairing by "k-th execution" is what the hardware does when lanes
// branch the same way each time; a branch inside a loop that lanes take on
// different iterations is paired as if they had taken it together. The
// counts do not depend on the schedule's order of the lanes.
#include "profile.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "diagnostics.h"
#include "racecheck.h"

namespace cudacpu {

namespace {

struct Event {
    std::uintptr_t address;  // global: the address; shared: the offset from the block's shared memory
    const void* pc;
    std::uint32_t size;
    std::uint8_t lane;
    AccessOp op;
    bool shared;
};

struct Counts {
    std::uint64_t instructions = 0;      // warp-level instructions (requests)
    std::uint64_t lanes = 0;             // active lanes, summed over them
    std::uint64_t lane_slots = 0;        // lanes the warps had, summed (full warps: 32 each)
    std::uint64_t divergent = 0;         // instructions with some of the warp's lanes inactive
    std::uint64_t sectors = 0, ideal_sectors = 0;        // global memory
    std::uint64_t wavefronts = 0, ideal_wavefronts = 0;  // shared memory

    void add(const Counts& o) {
        instructions += o.instructions;
        lanes += o.lanes;
        lane_slots += o.lane_slots;
        divergent += o.divergent;
        sectors += o.sectors;
        ideal_sectors += o.ideal_sectors;
        wavefronts += o.wavefronts;
        ideal_wavefronts += o.ideal_wavefronts;
    }
};

// The instruction's code address, its memory space and operation, packed into one key.
std::uint64_t site_key(const void* pc, bool shared, AccessOp op) {
    return (reinterpret_cast<std::uintptr_t>(pc) << 3) | (shared ? 4u : 0u) | static_cast<unsigned>(op);
}

const char* op_name(AccessOp op) {
    switch (op) {
        case AccessOp::kLoad: return "load";
        case AccessOp::kStore: return "store";
        default: return "atomic";
    }
}

// Distinct 32-byte sectors, and the sectors the same bytes would fill packed.
void count_global(const Event* const* lanes, int n, Counts& c) {
    std::array<std::pair<std::uintptr_t, std::uintptr_t>, 32> spans;
    thread_local std::vector<std::uintptr_t> sectors;
    sectors.clear();
    for (int i = 0; i < n; ++i) {
        const Event& e = *lanes[i];
        spans[i] = {e.address, e.address + e.size};
        for (std::uintptr_t s = e.address >> 5; s <= (e.address + e.size - 1) >> 5; ++s) sectors.push_back(s);
    }
    // A warp's lanes mostly come in address order (a coalesced access): then nothing needs sorting.
    if (!std::is_sorted(sectors.begin(), sectors.end())) std::sort(sectors.begin(), sectors.end());
    c.sectors += static_cast<std::uint64_t>(std::unique(sectors.begin(), sectors.end()) - sectors.begin());
    if (!std::is_sorted(spans.begin(), spans.begin() + n)) std::sort(spans.begin(), spans.begin() + n);
    std::uint64_t bytes = 0;
    std::uintptr_t covered = 0;
    for (int i = 0; i < n; ++i) {
        const std::uintptr_t from = std::max(spans[i].first, covered);
        if (spans[i].second > from) bytes += spans[i].second - from;
        covered = std::max(covered, spans[i].second);
    }
    c.ideal_sectors += (bytes + 31) / 32;
}

// Passes through the 32 banks, phase by phase.
void count_shared(const Event* const* lanes, int n, Counts& c) {
    const std::uint32_t size = lanes[0]->size;
    const int per_phase = size <= 4 ? 32 : size <= 8 ? 16 : size <= 16 ? 8 : 1;
    thread_local std::array<std::vector<std::uintptr_t>, 32> phase_words;  // the words each phase touches
    std::array<bool, 32> used{};
    for (auto& words : phase_words) words.clear();
    for (int i = 0; i < n; ++i) {
        const Event& e = *lanes[i];
        const int phase = e.lane / per_phase;
        used[phase] = true;
        for (std::uintptr_t w = e.address >> 2; w <= (e.address + e.size - 1) >> 2; ++w) phase_words[phase].push_back(w);
    }
    for (int p = 0; p < 32; ++p) {
        if (!used[p]) continue;
        std::vector<std::uintptr_t>& words = phase_words[p];
        std::sort(words.begin(), words.end());
        words.erase(std::unique(words.begin(), words.end()), words.end());
        std::array<std::uint32_t, 32> per_bank{};
        std::uint32_t most = 0;
        for (std::uintptr_t w : words) most = std::max(most, ++per_bank[w & 31]);
        c.wavefronts += most;
        c.ideal_wavefronts += (words.size() + 31) / 32;
    }
}

}  // namespace

// A block's accesses beyond this many (about 100 MB of them) are not kept: the launch's line says the kernel
// was too much to count, rather than counting part of it.
constexpr std::size_t kMaxEvents = std::size_t(4) << 20;

class WarpRecorder {
public:
    // Accesses are kept per warp until its lanes are together again.
    void record(int thread, const Event& e) {
        if (overflow) return;
        if (++pending_ > kMaxEvents) {
            overflow = true;
            discard();
            return;
        }
        const std::size_t w = static_cast<std::size_t>(thread) / 32;
        if (w >= warps_.size()) warps_.resize(w + 1);
        warps_[w].push_back(e);
    }

    // Warp `warp` (or every warp: -1) is together again: its accesses since the last time are one stretch,
    // counted when the block is done. Called on the CUDA thread's own (small) stack: it only moves vectors.
    void close_stretch(int warp) {
        if (warp < 0) {
            for (std::size_t w = 0; w < warps_.size(); ++w) close_one(static_cast<int>(w));
        } else if (static_cast<std::size_t>(warp) < warps_.size()) {
            close_one(warp);
        }
    }

    // The block is done: counts its stretches, on the worker's own stack, outside any CUDA thread.
    void block_done(int threads_per_block, std::size_t static_shared) {
        static_shared_bytes = std::max(static_shared_bytes, static_shared);
        close_stretch(-1);
        for (Stretch& s : stretches_) flush_warp(s.warp, s.events, threads_per_block);
        recycle_stretches();
        pending_ = 0;
    }

    void discard() {
        for (auto& events : warps_) events.clear();
        recycle_stretches();
        pending_ = 0;
    }

    std::unordered_map<std::uint64_t, Counts> sites;
    std::size_t static_shared_bytes = 0;
    bool overflow = false;  // a block made more accesses than kMaxEvents: the launch is not counted

private:
    struct Stretch {
        int warp;
        std::vector<Event> events;
    };

    void close_one(int warp) {
        if (warps_[warp].empty()) return;
        stretches_.push_back(Stretch{warp, std::move(warps_[warp])});
        warps_[warp].clear();
        // A stretch's vector, kept with its capacity from an earlier block: grown afresh each block, the
        // vectors (half a megabyte for a warp of matmul_naive) cost the counted run a tenth of its time in
        // page faults and copies.
        if (!spares_.empty()) {
            warps_[warp].swap(spares_.back());
            spares_.pop_back();
        }
    }

    void recycle_stretches() {
        for (Stretch& s : stretches_) {
            s.events.clear();
            spares_.push_back(std::move(s.events));
        }
        stretches_.clear();
    }

    // A warp-level instruction is (site, k): every lane's k-th execution of the site. Events are grouped by
    // it with a counting sort over (site, k) slots, in linear time: a stretch of matmul_naive's warp holds
    // tens of thousands of events, and comparison-sorting them was most of a profiled run.
    void flush_warp(int warp, std::vector<Event>& events, int threads_per_block) {
        if (events.empty()) return;
        const int slots = std::min(32, threads_per_block - 32 * warp);
        // The k of each access: how often its lane had executed the instruction before.
        ks_.resize(events.size());
        site_of_.resize(events.size());
        site_index_.clear();
        used_sites_ = 0;
        for (std::size_t i = 0; i < events.size(); ++i) {
            const Event& e = events[i];
            const std::uint64_t key = site_key(e.pc, e.shared, e.op);
            const auto found = site_index_.try_emplace(key, used_sites_);
            if (found.second) {
                if (sites_.size() <= used_sites_) sites_.emplace_back();
                SiteRuns& fresh = sites_[used_sites_++];
                fresh.key = key;
                fresh.seen.fill(0);
                fresh.executed.clear();
            }
            SiteRuns& site = sites_[found.first->second];
            const std::uint32_t k = site.seen[e.lane]++;
            if (k == site.executed.size()) site.executed.push_back(0);
            ++site.executed[k];
            ks_[i] = k;
            site_of_[i] = found.first->second;
        }
        merge_vectors(events);
        // Each (site, k) slot's place, then its events in order.
        std::uint32_t total = 0;
        for (std::uint32_t s = 0; s < used_sites_; ++s) {
            sites_[s].first_slot = total;
            total += static_cast<std::uint32_t>(sites_[s].executed.size());
        }
        slot_start_.assign(total + 1, 0);
        for (std::size_t i = 0; i < events.size(); ++i) ++slot_start_[sites_[site_of_[i]].first_slot + ks_[i] + 1];
        for (std::uint32_t g = 0; g < total; ++g) slot_start_[g + 1] += slot_start_[g];
        fill_.assign(slot_start_.begin(), slot_start_.end() - 1);
        order_.resize(events.size());
        for (std::uint32_t i = 0; i < events.size(); ++i) order_[fill_[sites_[site_of_[i]].first_slot + ks_[i]]++] = i;
        std::array<const Event*, 32> lanes;
        for (std::uint32_t s = 0; s < used_sites_; ++s) {
            Counts& c = sites[sites_[s].key];
            const std::uint32_t first = sites_[s].first_slot, end = first + static_cast<std::uint32_t>(sites_[s].executed.size());
            for (std::uint32_t g = first; g < end; ++g) {
                int n = 0;
                for (std::uint32_t j = slot_start_[g]; j < slot_start_[g + 1] && n < 32; ++j) lanes[n++] = &events[order_[j]];
                if (n == 0) continue;  // every lane's access of it was merged into the one before
                ++c.instructions;
                c.lanes += static_cast<std::uint64_t>(n);
                c.lane_slots += static_cast<std::uint64_t>(slots);
                if (n < slots) ++c.divergent;
                if (lanes[0]->shared) count_shared(lanes.data(), n, c);
                else count_global(lanes.data(), n, c);
            }
        }
        events.clear();
    }

    // nvcc makes one 8- or 16-byte instruction of a copy it knows to be aligned: a float4, an aligned
    // struct, four floats assigned to one of them. g++ may leave such a copy as one access per element.
    // A lane's back-to-back accesses on one source line that fill an aligned 8- or 16-byte block are
    // taken for one instruction, but only where every lane that executes the first of them does the
    // same: nvcc decides once for the warp, from the code, not from where each lane's address fell.
    void merge_vectors(std::vector<Event>& events) {
        chain_end_.assign(events.size(), 0);
        candidates_.clear();
        for (std::size_t i = 0; i < events.size();) {
            const Event& first = events[i];
            std::size_t j = i + 1;
            std::uint64_t bytes = first.size;
            while (first.op != AccessOp::kAtomic && j < events.size() && bytes < 16) {
                const Event& e = events[j];
                const Event& before = events[j - 1];
                if (e.lane != first.lane || e.op != first.op || e.shared != first.shared || e.size != first.size ||
                    before.address + before.size != e.address || !same_line(first.pc, e.pc))
                    break;
                bytes += e.size;
                ++j;
            }
            if (j - i < 2 || (bytes != 8 && bytes != 16) || first.address % bytes != 0) {
                ++i;
                continue;
            }
            chain_end_[i] = j;
            Candidate& c = candidates_[{site_key(first.pc, first.shared, first.op), ks_[i]}];
            c.length = (c.lanes == 0 || c.length == j - i) ? j - i : 0;
            ++c.lanes;
            i = j;
        }
        if (candidates_.empty()) return;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < events.size();) {
            Event e = events[i];
            const std::uint32_t k = ks_[i];
            std::size_t next = i + 1;
            if (chain_end_[i]) {
                const KeyK key{site_key(e.pc, e.shared, e.op), k};
                const Candidate& c = candidates_[key];
                if (c.length == chain_end_[i] - i && c.lanes == sites_[site_of_[i]].executed[k]) {
                    e.size = static_cast<std::uint32_t>(e.size * c.length);
                    next = chain_end_[i];
                }
            }
            events[kept] = e;
            ks_[kept] = k;
            site_of_[kept] = site_of_[i];
            ++kept;
            i = next;
        }
        events.resize(kept);
        ks_.resize(kept);
        site_of_.resize(kept);
    }

    bool same_line(const void* a, const void* b) { return a == b || line_id(a) == line_id(b); }
    int line_id(const void* pc);

    struct KeyK {
        std::uint64_t key;
        std::uint32_t k;
        bool operator==(const KeyK& o) const { return key == o.key && k == o.k; }
    };
    struct KeyKHash {
        std::size_t operator()(const KeyK& v) const { return std::hash<std::uint64_t>()(v.key * 0x9E3779B97F4A7C15ull + v.k); }
    };
    struct Candidate {
        std::uint32_t lanes = 0;
        std::size_t length = 0;  // pieces per lane; 0 when lanes disagree
    };

    std::vector<std::uint32_t> ks_;
    std::vector<std::size_t> chain_end_;  // for the first access of a mergeable run: one past its last
    std::unordered_map<KeyK, Candidate, KeyKHash> candidates_;
    std::unordered_map<const void*, int> line_ids_;
    std::vector<std::vector<Event>> warps_;
    std::vector<Stretch> stretches_;
    std::vector<std::vector<Event>> spares_;  // emptied stretches' vectors, for the next ones
    std::size_t pending_ = 0;
    // One stretch's instructions: per site, how often each lane executed it and how many lanes executed
    // it the k-th time. Reused from stretch to stretch (only the first used_sites_ are this stretch's).
    struct SiteRuns {
        std::uint64_t key = 0;
        std::array<std::uint32_t, 32> seen{};
        std::vector<std::uint32_t> executed;
        std::uint32_t first_slot = 0;
    };
    std::vector<SiteRuns> sites_;
    std::uint32_t used_sites_ = 0;
    std::unordered_map<std::uint64_t, std::uint32_t> site_index_;
    std::vector<std::uint32_t> site_of_;                  // per event: its index into sites_
    std::vector<std::uint32_t> slot_start_, fill_, order_;  // the counting sort by (site, k)
};

namespace {

std::atomic<bool> g_requested{false};
std::mutex g_mutex;
std::string g_path;       // where lines go ("-": kept only as the last line)
std::string g_last_line;  // the last profiled launch's line
bool g_env_read = false;
std::vector<std::unique_ptr<WarpRecorder>> g_recorders;  // the current launch's
// Code address -> "file.cu:12", under their own lock: symbolizing runs addr2line, never under g_mutex.
std::mutex g_places_mutex;
std::unordered_map<const void*, std::string> g_places;

void read_environment() {
    if (g_env_read) return;
    g_env_read = true;
    if (const char* path = std::getenv("CUDA_CPU_PROFILE"); path && *path) {
        g_path = path;
        g_requested.store(true);
    }
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (static_cast<unsigned char>(ch) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", ch);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

std::string dims(dim3 d) {
    return "[" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + "]";
}

// The code address as an offset into its executable or library: what addr2line takes.
std::uintptr_t offset_of(const void* pc, std::string* object = nullptr) {
    Dl_info info{};
    if (!dladdr(pc, &info) || !info.dli_fbase) return reinterpret_cast<std::uintptr_t>(pc);
    if (object && info.dli_fname) *object = info.dli_fname;
    return reinterpret_cast<std::uintptr_t>(pc) - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
}

// "file.cu:12"; where this process cannot symbolize (a sandbox that runs no other program: addr2line),
// "pc:0x1a2b", the return address's offset, for the reader to symbolize (tools/profile.py's resolve_pcs).
std::string place_of(const void* pc) {
    {
        std::lock_guard<std::mutex> lock(g_places_mutex);
        auto it = g_places.find(pc);
        if (it != g_places.end()) return it->second;
    }
    std::string at = symbolize(pc, false);
    if (at.empty()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "pc:0x%lx", static_cast<unsigned long>(offset_of(pc)));
        at = buf;
    }
    std::lock_guard<std::mutex> lock(g_places_mutex);
    return g_places.emplace(pc, at).first->second;
}

// CUDA_CPU_PROFILE_LINES=FILE: the executable's line table ("0x1a2b file.cu:12" per line, by address), which
// tells whether two accesses are on one line without running addr2line (the grader's sandbox runs no
// other program). Read once.
struct LineTable {
    std::vector<std::pair<std::uintptr_t, int>> starts;  // (offset, line id), sorted
    bool loaded = false;
};

LineTable& line_table() {
    static LineTable table = [] {
        LineTable t;
        const char* path = std::getenv("CUDA_CPU_PROFILE_LINES");
        if (!path || !*path) return t;
        FILE* f = std::fopen(path, "r");
        if (!f) return t;
        std::unordered_map<std::string, int> ids;
        unsigned long offset = 0;
        char place[512];
        while (std::fscanf(f, "%lx %511s", &offset, place) == 2)
            t.starts.emplace_back(offset, ids.emplace(place, static_cast<int>(ids.size())).first->second);
        std::fclose(f);
        std::sort(t.starts.begin(), t.starts.end());
        t.loaded = !t.starts.empty();
        return t;
    }();
    return table;
}

}  // namespace

// Symbolizes once per code address (cached for the process), only for accesses that could merge.
int WarpRecorder::line_id(const void* pc) {
    auto it = line_ids_.find(pc);
    if (it != line_ids_.end()) return it->second;
    int id;
    const LineTable& table = line_table();
    if (table.loaded) {
        // The call's own instruction (the return address is the one after it) and the row that covers it.
        const std::uintptr_t at = offset_of(pc) - 1;
        auto row = std::upper_bound(table.starts.begin(), table.starts.end(), std::make_pair(at, INT32_MAX));
        id = row == table.starts.begin() ? -1 - static_cast<int>(line_ids_.size()) : std::prev(row)->second;
    } else {
        const std::string place = place_of(pc);
        static std::unordered_map<std::string, int> ids;
        std::lock_guard<std::mutex> lock(g_places_mutex);
        id = ids.emplace(place, static_cast<int>(ids.size())).first->second;
    }
    line_ids_.emplace(pc, id);
    return id;
}

namespace {

// The launch's line: its shape, and the counts per source line, memory space and operation.
std::string launch_line(const LaunchState& launch) {
    std::map<std::tuple<std::string, bool, int>, Counts> by_line;
    std::size_t static_shared = 0;
    bool overflow = false;
    for (const auto& r : g_recorders) {
        static_shared = std::max(static_shared, r->static_shared_bytes);
        overflow = overflow || r->overflow;
        for (const auto& [key, counts] : r->sites) {
            const void* pc = reinterpret_cast<const void*>(key >> 3);
            by_line[{place_of(pc), (key & 4) != 0, static_cast<int>(key & 3)}].add(counts);
        }
    }
    std::string line = "{\"kernel\":" + json_string(launch.kernel_name()) +
                       ",\"launched_at\":" + json_string(where(Site{launch.site.file, launch.site.line})) +
                       ",\"grid\":" + dims(launch.grid) + ",\"block\":" + dims(launch.block) +
                       ",\"dynamic_shared_bytes\":" + std::to_string(launch.dynamic_shared_bytes) +
                       ",\"static_shared_bytes\":" + std::to_string(static_shared) +
                       ",\"launch_bounds\":" + std::to_string(launch.id.max_threads);
    if (overflow)  // counted in part, it would mislead: said instead
        return line + ",\"too_many_accesses\":" + std::to_string(kMaxEvents) + ",\"sites\":[]}";
    line += ",\"sites\":[";
    bool first = true;
    for (const auto& [where_, c] : by_line) {
        // An address whose every access was merged into the one before (four floats read as one 16-byte load)
        // counts nothing of its own; where no line joins it to that one (a process that cannot run addr2line)
        // it would be a site without instructions, which the reader refuses.
        if (c.instructions == 0) continue;
        const auto& [at, shared, op] = where_;
        line += std::string(first ? "" : ",") + "{\"at\":" + json_string(at) + ",\"space\":\"" +
                (shared ? "shared" : "global") + "\",\"op\":\"" + op_name(static_cast<AccessOp>(op)) +
                "\",\"instructions\":" + std::to_string(c.instructions) + ",\"lanes\":" + std::to_string(c.lanes) +
                ",\"lane_slots\":" + std::to_string(c.lane_slots) + ",\"divergent\":" + std::to_string(c.divergent);
        if (shared)
            line += ",\"wavefronts\":" + std::to_string(c.wavefronts) +
                    ",\"ideal_wavefronts\":" + std::to_string(c.ideal_wavefronts) + "}";
        else
            line += ",\"sectors\":" + std::to_string(c.sectors) + ",\"ideal_sectors\":" + std::to_string(c.ideal_sectors) +
                    "}";
        first = false;
    }
    return line + "]}";
}

}  // namespace

bool profile_enabled() {
    std::lock_guard<std::mutex> lock(g_mutex);
    read_environment();
    return g_requested.load() && racecheck_enabled();
}

void profile_begin(const LaunchState&) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_recorders.clear();
}

WarpRecorder* profile_attach(const LaunchState& launch) {
    if (!launch.profiled) return nullptr;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_recorders.push_back(std::make_unique<WarpRecorder>());
    return g_recorders.back().get();
}

void profile_block_done(WarpRecorder* recorder, int threads_per_block, std::size_t static_shared_bytes) {
    if (recorder) recorder->block_done(threads_per_block, static_shared_bytes);
}

void profile_record(WarpRecorder* recorder, int thread, const void* pc, std::uintptr_t address, std::size_t size,
                    AccessOp op, bool shared) {
    if (size == 0) return;
    recorder->record(thread, Event{address, pc, static_cast<std::uint32_t>(size), static_cast<std::uint8_t>(thread % 32),
                                   op, shared});
}

void profile_converged(WarpRecorder* recorder, int warp) {
    if (recorder) recorder->close_stretch(warp);
}

void profile_discard(WarpRecorder* recorder) {
    if (recorder) recorder->discard();
}

void profile_end(const LaunchState& launch) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (launch.error() == cudaSuccess) {
        g_last_line = launch_line(launch);
        if (g_path != "-") {
            if (FILE* f = std::fopen(g_path.c_str(), "a")) {
                std::fprintf(f, "%s\n", g_last_line.c_str());
                std::fclose(f);
            } else {
                report_diagnostic("cannot write the profile to " + g_path + " (CUDA_CPU_PROFILE)");
            }
        }
    }
    g_recorders.clear();
}

}  // namespace cudacpu

extern "C" {

int cudacpu_set_profile(const char* path) {
    std::lock_guard<std::mutex> lock(cudacpu::g_mutex);
    cudacpu::g_env_read = true;
    cudacpu::g_path = path ? path : "";
    cudacpu::g_requested.store(path && *path);
    return cudacpu::racecheck_enabled() ? 0 : -1;
}

const char* cudacpu_profile_last(void) {
    std::lock_guard<std::mutex> lock(cudacpu::g_mutex);
    return cudacpu::g_last_line.c_str();
}
}
