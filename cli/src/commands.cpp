#include "commands.h"

#include "exit_codes.h"
#include "signals.h"

namespace df11::app {

int report_failure(const Status& status, Console& console) {
  console.progress_finish();
  console.error(status.message() + " [" + error_code_name(status.code()) + "]");
  return exit_code_for(status);
}

int run_compress_command(const CompressOptions& options, const OutputOptions& output,
                         std::ostream& out, std::ostream& err) {
  Console console(out, err, output.verbosity, output.progress);
  auto summary = compress_model(options, console, interrupt_token());
  if (!summary) return report_failure(summary.status(), console);
  console.result(compress_summary_line(options, *summary));
  return kExitOk;
}

int run_decompress_command(const DecompressOptions& options, const OutputOptions& output,
                           std::ostream& out, std::ostream& err) {
  Console console(out, err, output.verbosity, output.progress);
  auto summary = decompress_model(options, console, interrupt_token());
  if (!summary) return report_failure(summary.status(), console);
  console.result(decompress_summary_line(options, *summary));
  return kExitOk;
}

int run_verify_command(const VerifyOptions& options, const OutputOptions& output, std::ostream& out,
                       std::ostream& err) {
  Console console(out, err, output.verbosity, output.progress);
  auto report = verify_model(options, console, interrupt_token());
  if (!report) return report_failure(report.status(), console);
  for (const std::string& note : report->notes) console.result("note: " + note);
  // The verdict is printed even with -q: it is the command's answer.
  console.report(verify_summary_line(options, *report));
  if (report->ok()) return kExitOk;
  console.error("verification failed: " + std::to_string(report->failures.size()) +
                " problems (listed above)");
  return kExitDataError;
}

}  // namespace df11::app
