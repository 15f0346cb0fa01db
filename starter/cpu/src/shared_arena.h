// The shared memory of the block a worker is running.
//
// Layout: the dynamic shared memory (extern __shared__) first, then each
// static __shared__ variable in the order threads first reach it, every one
// followed by a redzone. At the start of a block everything is garbage again
// (a NaN pattern), so a read of an element no thread wrote shows up in the
// result; under AddressSanitizer the redzones are poisoned, so an access past
// a variable's end is reported with the variable's name.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../include/cudacpu/shared_memory.h"

namespace cudacpu {

// The garbage a block's shared memory starts with: 0xFFF0DEAD in every
// 32-bit word, a NaN as a float and (word pairs) as a double, -991571 as an int.
constexpr unsigned kSharedGarbage = 0xFFF0DEADu;

class SharedArena {
public:
    SharedArena();
    ~SharedArena();
    SharedArena(const SharedArena&) = delete;
    SharedArena& operator=(const SharedArena&) = delete;

    // Starts a block: `dynamic_bytes` of dynamic shared memory, no static variables yet.
    void begin_block(std::size_t dynamic_bytes);
    char* dynamic_base() const { return base_; }

    struct Var {
        const void* key;
        char* ptr;
        detail::SharedVarInfo info;
    };
    // The block's copy of a variable; nullptr (and *why) when the block's
    // shared memory would exceed `limit` bytes (static + dynamic) or static
    // variables 48 KiB.
    void* get(const void* key, const detail::SharedVarInfo& info, std::size_t limit, std::string* why);

    // For diagnostics: whether `addr` lies in this arena, and what is near it.
    bool contains(const void* addr) const;
    // Describes an access to `addr` of `size` bytes: "tile[32][0]: 0 bytes past the end of
    // __shared__ float tile[32][33] (transpose.cu:45)". Empty if it is not near any variable.
    std::string describe_access(const void* addr, std::size_t size) const;
    void note_dynamic(const char* name, Site site, std::size_t element_bytes);
    std::size_t static_bytes() const { return static_bytes_; }

private:
    char* base_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t dynamic_bytes_ = 0;
    std::size_t cursor_ = 0;      // first free byte
    std::size_t high_water_ = 0;  // end of the part the last block used
    std::size_t static_bytes_ = 0;
    std::vector<Var> vars_;
    const char* dynamic_name_ = nullptr;
    Site dynamic_site_{nullptr, 0};
    std::size_t dynamic_element_bytes_ = 1;
};

// Fills [p, p + n) with the kSharedGarbage pattern, word-aligned from p.
void fill_garbage(void* p, std::size_t n);

}  // namespace cudacpu
