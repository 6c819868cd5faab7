// `df11 bench decode`: the decode benchmark (pipeline/bench_decode.h) as a command.
#pragma once

#include <ostream>

#include "bench_decode.h"

namespace df11::app {

// make_bench_workload + bench_decode_workload; prints errors on `err`; returns the exit code
// (0, or the code for the failing Status, e.g. when --device cuda has no device).
int run_bench_decode(const BenchDecodeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace df11::app
