#include "npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
    throw DataFileError(path + ": " + why);
}

// The value of `key` in the header dict: "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"
std::string header_value(const std::string& header, const std::string& key, const std::string& path) {
    const std::string quoted = "'" + key + "':";
    const auto at = header.find(quoted);
    if (at == std::string::npos) fail(path, "corrupt .npy header: no '" + key + "' field");
    auto pos = header.find_first_not_of(' ', at + quoted.size());
    if (pos == std::string::npos) fail(path, "corrupt .npy header: empty '" + key + "' field");
    const char open = header[pos];
    const char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
    const auto end = header.find(close, pos + 1);
    if (end == std::string::npos) fail(path, "corrupt .npy header: unterminated '" + key + "' field");
    return open == '(' || open == '\'' ? header.substr(pos + 1, end - pos - 1) : header.substr(pos, end - pos);
}

}  // namespace

std::size_t NpyArray::elements() const {
    std::size_t n = 1;
    for (auto d : shape) n *= static_cast<std::size_t>(d);
    return n;
}

std::vector<double> NpyArray::to_doubles() const {
    std::vector<double> out(elements());
    for (std::size_t i = 0; i < out.size(); ++i) {
        switch (dtype) {
            case DType::f32: { float v; std::memcpy(&v, &bytes[i * 4], 4); out[i] = v; break; }
            case DType::f64: { double v; std::memcpy(&v, &bytes[i * 8], 8); out[i] = v; break; }
            case DType::i32: { std::int32_t v; std::memcpy(&v, &bytes[i * 4], 4); out[i] = v; break; }
        }
    }
    return out;
}

NpyArray read_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open (missing data file? run `make data` to regenerate data/)");
    std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

    static const unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (file.size() < 10 || std::memcmp(file.data(), magic, 6) != 0) fail(path, "not a .npy file (bad magic bytes)");
    const int major = file[6];
    std::size_t header_len = 0, header_at = 0;
    if (major == 1) {
        header_len = file[8] | (file[9] << 8);
        header_at = 10;
    } else if (major == 2 || major == 3) {
        if (file.size() < 12) fail(path, "truncated .npy header");
        header_len = file[8] | (file[9] << 8) | (file[10] << 16) | (std::size_t(file[11]) << 24);
        header_at = 12;
    } else {
        fail(path, "unsupported .npy version " + std::to_string(major));
    }
    if (file.size() < header_at + header_len) fail(path, "truncated .npy header");
    const std::string header(file.begin() + header_at, file.begin() + header_at + header_len);

    NpyArray a;
    const std::string descr = header_value(header, "descr", path);
    if (descr == "<f4") a.dtype = DType::f32;
    else if (descr == "<f8") a.dtype = DType::f64;
    else if (descr == "<i4") a.dtype = DType::i32;
    else fail(path, "unsupported element type '" + descr + "' (need <f4, <f8 or <i4)");
    if (header_value(header, "fortran_order", path) != "False") fail(path, "Fortran-ordered arrays are not supported");

    const std::string dims = header_value(header, "shape", path);
    std::size_t pos = 0;
    while (pos < dims.size()) {
        const auto comma = dims.find(',', pos);
        std::string item = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        item.erase(0, item.find_first_not_of(' '));
        item.erase(item.find_last_not_of(' ') + 1);
        if (!item.empty()) {
            if (item.find_first_not_of("0123456789") != std::string::npos)
                fail(path, "corrupt .npy header: bad shape (" + dims + ")");
            a.shape.push_back(std::stoll(item));
        }
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }

    const std::size_t want = a.elements() * dtype_size(a.dtype);
    const std::size_t have = file.size() - header_at - header_len;
    if (have != want)
        fail(path, "holds " + std::to_string(have) + " bytes of data but its header promises " +
                       std::to_string(want) + " (truncated or corrupt file)");
    a.bytes.assign(file.begin() + header_at + header_len, file.end());
    return a;
}
