#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "data_dir.h"
#include "npy.h"

namespace {

std::string temp_file(const std::string& name, const std::string& bytes) {
    const std::string path = "/tmp/harness_unit_" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

std::string message_of(const std::string& path) {
    try {
        read_npy(path);
    } catch (const DataFileError& e) {
        return e.what();
    }
    return "";
}

std::string npy_header(const std::string& dict) {
    std::string h = dict;
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
    return out + h;
}

}  // namespace

TEST_CASE("a stored case reads with its type and shape") {
    const NpyArray a = read_npy(test_data_dir() + "/cases/matmul_naive/float64/17x33x29/a.npy");
    CHECK(a.dtype == DType::f64);
    CHECK(a.shape == std::vector<std::int64_t>{17, 29});
    CHECK(a.elements() == 17 * 29);
    const NpyArray e = read_npy(test_data_dir() + "/cases/fill/int32/3x5/expected.npy");
    CHECK(e.to_doubles() == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
}

TEST_CASE("a missing data file is named in the error") {
    const std::string msg = message_of("/nonexistent/dir/a.npy");
    CHECK(msg.rfind("/nonexistent/dir/a.npy: cannot open", 0) == 0);
}

TEST_CASE("a file that is not .npy is named in the error") {
    const std::string path = temp_file("not_npy.npy", "hello, world");
    CHECK(message_of(path) == path + ": not a .npy file (bad magic bytes)");
}

TEST_CASE("a truncated .npy file is named in the error") {
    const std::string header = npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }");
    const std::string path = temp_file("truncated.npy", header + std::string(12, '\0'));
    const std::string msg = message_of(path);
    CHECK(msg.rfind(path + ": holds 12 bytes of data but its header promises 16", 0) == 0);
}

TEST_CASE("an unsupported element type is named with the file") {
    const std::string header = npy_header("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }");
    const std::string path = temp_file("int64.npy", header + std::string(8, '\0'));
    CHECK(message_of(path).find(path + ": unsupported element type '<i8'") == 0);
}

TEST_CASE("a well-formed hand-written file reads back") {
    const std::string header = npy_header("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1), }");
    const std::string path = temp_file("ok.npy", header + std::string("\x05\0\0\0\xff\xff\xff\xff", 8));
    const NpyArray a = read_npy(path);
    CHECK(a.to_doubles() == std::vector<double>{5, -1});
}
