#include "bench_command.h"

#include "commands.h"
#include "exit_codes.h"
#include "summary_text.h"

namespace df11::app {

int run_bench_decode(const BenchDecodeOptions& o, std::ostream& out, std::ostream& err) {
  Status s = check_bench_options(o);  // before minutes of generating and encoding
  if (s.is_ok()) {
    Result<BenchWorkload> w = make_bench_workload(o);
    s = w.is_ok() ? bench_decode_workload(o, *w, out) : w.status();
  }
  if (o.json && !s.is_ok()) {
    out << error_json("bench decode", s)
               .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
        << "\n";
  }
  if (!s.is_ok()) err << "error: " << error_line(s) << "\n";
  return exit_code_for(s);
}

int run_bench_gemv(const BenchGemvOptions& o, std::ostream& out, std::ostream& err) {
  Status s = check_bench_gemv_options(o);  // before minutes of generating and encoding
  if (s.is_ok()) {
    Result<BenchWorkload> w = make_bench_workload(o.block);
    s = w.is_ok() ? bench_gemv_workload(o, *w, out) : w.status();
  }
  // A mismatch comes after the report, whose document says so ("ok": false); any other
  // failure comes before it.
  if (o.json && !s.is_ok() && s.code() != ErrorCode::kMismatch) {
    out << error_json("bench gemv", s)
               .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
        << "\n";
  }
  if (!s.is_ok()) err << "error: " << error_line(s) << "\n";
  return exit_code_for(s);
}

}  // namespace df11::app
