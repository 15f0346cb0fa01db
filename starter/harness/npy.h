// Reads the .npy files in data/ (NumPy's format, version 1.0 to 3.0, C order,
// little-endian float32, float64 or int32). No packaged C++ reader exists on
// Debian, and the subset we need is one header and one block of bytes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtype.h"

// A data file that is missing, unreadable or not what it should be. The
// message always starts with the file's path.
struct DataFileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct NpyArray {
    DType dtype = DType::f32;
    std::vector<std::int64_t> shape;
    std::vector<unsigned char> bytes;  // elements in C order

    std::size_t elements() const;
    std::vector<double> to_doubles() const;
};

NpyArray read_npy(const std::string& path);
