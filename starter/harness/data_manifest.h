// data/manifest.json: the stored reference cases (written by data/generate.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtype.h"
#include "registry.h"
#include "shape.h"

struct ManifestCase {
    const Task* task = nullptr;
    DType dtype = DType::f32;
    Shape shape;
    std::uint64_t seed = 0;
    std::string dir;  // relative to the data directory
};

// Throws DataFileError naming the manifest when it is missing or malformed,
// or names a task, type or shape the registry does not know.
std::vector<ManifestCase> read_manifest(const std::string& data_dir);
