// The harness's version, in every JSON record. Bump it whenever what the
// harness checks or how it times changes: the grader keys cached results on it.
#pragma once

#define HARNESS_VERSION "2.0.0"
// Version of the JSON records' layout (RESULTS_SCHEMA.md).
#define HARNESS_SCHEMA_VERSION 2
