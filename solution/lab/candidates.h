// The lab's candidates: ways to compute one of the registry's tasks, each under
// the name the sweep is given (--candidates v31,large/4,auto). Every candidate
// file registers its own at start-up (a static object), so the sweep holds
// exactly the candidates of the objects it was linked with.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "registry.h"

namespace lab {

struct Candidate {
    std::string task;  // the registry's task id: matmul_fast, transpose
    std::string name;  // what --candidates names
    std::string what;  // one line for people
    std::function<void(DType, const Shape&, const DeviceArgs&)> launch;
    // What the candidate does at a shape (auto: the plan it picks); may be empty.
    std::function<std::string(const Shape&)> plan;
};

inline std::vector<Candidate>& candidates() {
    static std::vector<Candidate> all;
    return all;
}

// For `static const bool registered = add_candidates({...});` in a candidate file.
inline bool add_candidates(std::vector<Candidate> more) {
    for (Candidate& c : more) candidates().push_back(std::move(c));
    return true;
}

using MatmulLauncher = std::function<void(const float*, const float*, float*, int, int, int)>;

inline Candidate matmul_candidate(std::string name, std::string what, MatmulLauncher launch,
                                  std::function<std::string(const Shape&)> plan = {}) {
    return {"matmul_fast", std::move(name), std::move(what),
            [launch](DType, const Shape& s, const DeviceArgs& a) {
                launch(static_cast<const float*>(a.inputs[0]), static_cast<const float*>(a.inputs[1]),
                       static_cast<float*>(a.output), static_cast<int>(s.m()), static_cast<int>(s.n()),
                       static_cast<int>(s.k()));
            },
            std::move(plan)};
}

template <typename T>
using TransposeLauncher = void (*)(const T*, T*, int, int);

inline Candidate transpose_candidate(std::string name, std::string what, TransposeLauncher<float> f32,
                                     TransposeLauncher<std::int32_t> i32) {
    return {"transpose", std::move(name), std::move(what),
            [f32, i32](DType d, const Shape& s, const DeviceArgs& a) {
                const int rows = static_cast<int>(s.dims[0]), cols = static_cast<int>(s.dims[1]);
                if (d == DType::f32)
                    f32(static_cast<const float*>(a.inputs[0]), static_cast<float*>(a.output), rows, cols);
                else
                    i32(static_cast<const std::int32_t*>(a.inputs[0]), static_cast<std::int32_t*>(a.output), rows,
                        cols);
            },
            {}};
}

}  // namespace lab
