// Calls the launchers named on the command line with null pointers and prints
// what each one throws, one line per call. Linked like the harness (the task
// files' objects, then the fallback launchers), it shows without a GPU which
// launchers a submission's build stood in for, and with which message: a
// stand-in throws before it touches the GPU.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "task_unavailable.h"
#include "tasks.h"

namespace {

void call(const std::string& which) {
    if (which == "matmul_naive<float>") matmul_naive<float>(nullptr, nullptr, nullptr, 1, 1, 1);
    else if (which == "matmul_naive<double>") matmul_naive<double>(nullptr, nullptr, nullptr, 1, 1, 1);
    else if (which == "matmul_naive<int32>") matmul_naive<std::int32_t>(nullptr, nullptr, nullptr, 1, 1, 1);
    else if (which == "transpose<float>") transpose<float>(nullptr, nullptr, 1, 1);
    else if (which == "add<float>") add<float>(nullptr, nullptr, nullptr, 1, 1);
    else if (which == "fill") fill(nullptr, 1, 1);
    else throw std::invalid_argument("the probe does not know " + which);
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        try {
            call(argv[i]);
            std::printf("%s: returned\n", argv[i]);
        } catch (const TaskUnavailable& e) {
            std::printf("%s: unavailable: %s\n", argv[i], e.what());
        } catch (const TaskNotImplemented&) {
            std::printf("%s: not implemented\n", argv[i]);
        }
    }
    return 0;
}
