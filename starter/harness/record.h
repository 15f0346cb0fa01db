// The harness's machine-readable output: one JSON object per line (JSON
// Lines). RESULTS_SCHEMA.md documents every field; result.schema.json and
// registry.schema.json are the same contract as JSON Schema.
#pragma once

#include <nlohmann/json.hpp>

#include "case_runner.h"
#include "device_info.h"
#include "device_limits.h"

nlohmann::json device_json(const DeviceInfo& d);
nlohmann::json case_record(const CaseResult& r, const Task& task, const DeviceInfo& d);
nlohmann::json limits_record(const DeviceLimits& l, const DeviceInfo& d);
// The whole registry, for `harness --list-tasks --json`.
nlohmann::json registry_json();
