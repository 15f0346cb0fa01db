// `harness --serve`: the harness as a long-lived process driven over stdin
// and stdout, one JSON object per line each way. The grader keeps one such
// process for a submission and one for the solution, and alternates timed
// samples between them (paired, ABAB timing) without paying a process start
// per sample. RESULTS_SCHEMA.md documents the requests and replies.
#pragma once

#include <cstdio>
#include <iosfwd>

#include "device_info.h"

// Answers requests until "quit" or end of input. Returns the exit status: 0,
// or 3 after a fault that left the GPU unusable (the reply says so first).
// Replies go to `out`, which should not be stdout: main() gives the protocol
// its own hidden descriptors and points stdout at stderr, so whatever the
// student's code prints cannot mix into the replies. A request's "nonce" is
// echoed in its reply, so the grader can tell the harness's replies from
// lines something else managed to write on the channel.
int serve(std::istream& in, std::FILE* out, const DeviceInfo& device);
