// The CPU backend answers the GPU probe (gpu_reference/probe.cu: warp
// shuffles and votes with widths and partial masks, barrier reductions,
// conversion and bit intrinsics, atomics, refused launches) exactly as an
// H100 did: gpu_reference/h100.txt is that GPU's output.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_reference/probe.h"
#include "support.h"

namespace {

std::vector<std::string> lines_of(std::istream& in) {
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '#') lines.push_back(line);
    return lines;
}

}  // namespace

TEST_CASE("every answer of the GPU probe matches the H100's") {
    std::string here = __FILE__;
    std::ifstream recorded(here.substr(0, here.rfind('/')) + "/gpu_reference/h100.txt");
    REQUIRE(recorded.good());
    const std::vector<std::string> gpu = lines_of(recorded);
    cudacpu_set_quiet(1);  // the probe's refused launches are expected
    std::istringstream answers(gpu_probe());
    cudacpu_set_quiet(0);
    const std::vector<std::string> cpu = lines_of(answers);
    REQUIRE(cpu.size() == gpu.size());
    for (std::size_t i = 0; i < gpu.size(); ++i) CHECK_MESSAGE(cpu[i] == gpu[i], "GPU: " << gpu[i] << "\nCPU: " << cpu[i]);
}
