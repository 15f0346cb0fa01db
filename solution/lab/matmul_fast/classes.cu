// The shipped matmul_fast (solution/kernels/matmul_fast.cu, compiled here as a
// part of this file, so that its insides can be called) as the sweep's candidates:
//   auto       the shipped launcher: the plan its dispatch picks for the shape
//   CLASS/P    the tile class CLASS with k in P pieces, whatever the shape:
//              the shipped classes (large, wide, medium) and the ones below,
//              tried for the dispatch table and left out of it.
#include "../../kernels/matmul_fast.cu"
#include "../candidates.h"

namespace {

// Tried beside the shipped classes.     BM   BN  warps  TN  blocks/SM
using Medium16 = Tiles<128, 128, 2, 2, 16, 2>;  // medium's tile with large's 8 x 16 per thread (4 warps)
using Medium1 = Tiles<128, 128, 2, 4, 8, 1>;    // medium without the 128-register cap of two blocks per SM
using Tall = Tiles<256, 128, 4, 2, 16, 1>;      // large turned on its side
using Small = Tiles<64, 128, 1, 2, 16, 4>;      // 2 warps of 8 x 16 per thread
using Small8 = Tiles<64, 64, 1, 2, 8, 4>;       // 2 warps of 8 x 8 per thread

const TileClass kLabClasses[] = {
    tile_class<Medium16>("medium16", 0.9), tile_class<Medium1>("medium1", 0.85), tile_class<Tall>("tall", 0.9),
    tile_class<Small>("small", 0.7),       tile_class<Small8>("small8", 0.6),
};

std::string describe(const Plan& p, const Shape& s) {
    const TileClass& t = *p.tiles;
    const int sms = sm_count();
    const std::int64_t blocks =
        std::int64_t(ceil_div(tiled(int(s.m()), t.bm), t.bm)) * ceil_div(tiled(int(s.n()), t.bn), t.bn) * p.parts;
    char text[96];
    std::snprintf(text, sizeof text, "%s/%d: %lld blocks, %.2f waves", t.name, p.parts,
                  static_cast<long long>(blocks), double(blocks) / (double(sms) * t.per_sm()));
    return text;
}

// Class t with k in `parts` pieces (fewer when k is too short for that many).
Plan forced(const TileClass& t, int k, int parts) {
    const int k_per_part = ceil_div(ceil_div(k, parts), 16) * 16;
    return {&t, ceil_div(k, k_per_part), k_per_part};
}

std::vector<lab::Candidate> all() {
    std::vector<lab::Candidate> list{lab::matmul_candidate(
        "auto", "the shipped matmul_fast: its dispatch's plan", matmul_fast,
        [](const Shape& s) { return describe(plan(int(s.m()), int(s.n()), int(s.k()), sm_count()), s); })};
    std::vector<const TileClass*> classes;
    for (const TileClass& t : kClasses) classes.push_back(&t);
    for (const TileClass& t : kLabClasses) classes.push_back(&t);
    for (const TileClass* t : classes)
        for (int parts = 1; parts <= kMaxParts; ++parts) {
            const std::string name = std::string(t->name) + "/" + std::to_string(parts);
            list.push_back(lab::matmul_candidate(
                name, std::to_string(t->bm) + " x " + std::to_string(t->bn) + " tiles, k in " + std::to_string(parts) +
                          " pieces",
                [t, parts](const float* a, const float* b, float* c, int m, int n, int k) {
                    run_plan(forced(*t, k, parts), a, b, c, m, n, k);
                },
                [t, parts](const Shape& s) { return describe(forced(*t, int(s.k()), parts), s); }));
        }
    return list;
}

const bool registered_classes = lab::add_candidates(all());

}  // namespace
