// `df11 bench decode` and `df11 bench gemv`: the benchmarks of pipeline/bench_decode.h and
// pipeline/bench_gemv.h as commands.
#pragma once

#include <ostream>

#include "df11/bench_decode.h"
#include "df11/bench_gemv.h"

namespace df11::app {

// make_bench_workload + bench_decode_workload; prints errors on `err`; returns the exit code
// (0, or the code for the failing Status, e.g. when --device cuda has no device).
int run_bench_decode(const BenchDecodeOptions& options, std::ostream& out, std::ostream& err);

// The same for the GEMV benchmark: no GPU (or no CUDA build) fails before the workload is
// generated, with the reason and the exit code of kUnsupported.
int run_bench_gemv(const BenchGemvOptions& options, std::ostream& out, std::ostream& err);

}  // namespace df11::app
