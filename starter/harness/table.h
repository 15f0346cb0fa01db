// The human-readable table the harness prints.
#pragma once

#include <cstdio>
#include <string>

#include "case_runner.h"
#include "device_info.h"
#include "device_limits.h"

void print_device_header(std::FILE* out, const DeviceInfo& d, std::uint64_t seed);
void print_limits(std::FILE* out, const DeviceLimits& l);
void print_table_header(std::FILE* out);
void print_case_row(std::FILE* out, const CaseResult& r);
// "3 ok, 1 wrong, 3 not implemented, 0 errors"
std::string status_counts(int ok, int wrong, int not_implemented, int errors);
