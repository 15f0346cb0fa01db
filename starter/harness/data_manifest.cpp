#include "data_manifest.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "npy.h"

std::vector<ManifestCase> read_manifest(const std::string& data_dir) {
    const std::string path = data_dir + "/manifest.json";
    std::ifstream in(path);
    if (!in) throw DataFileError(path + ": cannot open (is --data-dir right? run `make data` to regenerate it)");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw DataFileError(path + ": not valid JSON (" + e.what() + ")");
    }
    std::vector<ManifestCase> cases;
    try {
        for (const auto& c : j.at("cases")) {
            ManifestCase m;
            const std::string id = c.at("task").get<std::string>();
            m.task = find_task(id);
            if (!m.task) throw DataFileError(path + ": unknown task '" + id + "'");
            const std::string dtype = c.at("dtype").get<std::string>();
            if (!parse_dtype(dtype, &m.dtype)) throw DataFileError(path + ": unknown element type '" + dtype + "'");
            std::string why;
            if (!parse_shape(c.at("shape").get<std::string>(), m.task->shape_kind, &m.shape, &why))
                throw DataFileError(path + ": " + why);
            m.seed = c.at("seed").get<std::uint64_t>();
            m.dir = c.at("dir").get<std::string>();
            cases.push_back(m);
        }
    } catch (const nlohmann::json::exception& e) {
        throw DataFileError(path + ": malformed case entry (" + e.what() + ")");
    }
    return cases;
}
