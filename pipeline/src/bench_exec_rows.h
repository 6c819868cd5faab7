// The execution layout's rows of `df11 bench gemv` (cuda_exec_benchmark.h): text and JSON.
// CUDA builds only (DF11_HAVE_CUDA).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "cuda_exec_benchmark.h"
#include "df11/status.h"

namespace df11::app {

// The text rows: transcode, layout -> BF16, the fused GEMM per batch against cuBLAS, the
// model line.
void print_exec_rows(const cuda::ExecBenchmarkReport& r, int runs, std::ostream& out);

nlohmann::ordered_json exec_rows_json(const cuda::ExecBenchmarkReport& r);

// Every check of the report held: the layout decodes to the weights, the fused GEMM equals
// its reference bit for bit at every batch.
bool exec_rows_ok(const cuda::ExecBenchmarkReport& r);

// kMismatch naming the first check that failed, else OK.
Status check_exec_rows(const cuda::ExecBenchmarkReport& r);

}  // namespace df11::app
