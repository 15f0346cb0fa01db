// Where the tests find data/: $HARNESS_DATA_DIR, else ../data (tests run from starter/).
#pragma once

#include <cstdlib>
#include <string>

inline std::string test_data_dir() {
    const char* d = std::getenv("HARNESS_DATA_DIR");
    return d && *d ? d : "../data";
}
