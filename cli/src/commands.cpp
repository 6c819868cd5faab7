#include "commands.h"

#include "cli_text.h"
#include "df11/diffusers_folder.h"
#include "exit_codes.h"
#include "signals.h"
#include "summary_text.h"

namespace df11::app {
namespace {

// JSON text safe for any input: bytes that are not UTF-8 (file names) become U+FFFD instead
// of an exception.
void print_json(std::ostream& out, const nlohmann::ordered_json& j) {
  out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

int fail(const std::string& command, const Status& status, const OutputOptions& output,
         Console& console, std::ostream& out) {
  if (output.json) print_json(out, error_json(command, status));
  return report_failure(status, console);
}

}  // namespace

std::string error_line(const Status& status) {
  return status.message() + " [" + error_code_name(status.code()) + "]";
}

int report_failure(const Status& status, Console& console) {
  console.progress_finish();
  console.error(error_line(status));
  return exit_code_for(status);
}

int run_compress_command(const CompressOptions& options, const OutputOptions& output,
                         std::ostream& out, std::ostream& err) {
  Console console(out, err, output.json ? std::min(output.verbosity, 1) : output.verbosity,
                  output.progress);
  if (is_diffusers_folder(options.model_dir)) {
    auto pipeline = compress_diffusers(options, console, interrupt_token());
    if (!pipeline) return fail("compress", pipeline.status(), output, console, out);
    if (output.json) {
      print_json(out, diffusers_compress_json(options, *pipeline));
    } else {
      for (const std::string& line : diffusers_compress_lines(options, *pipeline)) {
        console.result(line);
      }
    }
    return kExitOk;
  }
  auto summary = compress_model(options, console, interrupt_token());
  if (!summary) return fail("compress", summary.status(), output, console, out);
  if (output.json) {
    print_json(out, compress_json(options, *summary));
  } else {
    console.result(compress_summary_line(options, *summary));
  }
  return kExitOk;
}

int run_decompress_command(const DecompressOptions& options, const OutputOptions& output,
                           std::ostream& out, std::ostream& err) {
  Console console(out, err, output.json ? std::min(output.verbosity, 1) : output.verbosity,
                  output.progress);
  if (is_diffusers_folder(options.df11_dir)) {
    auto pipeline = decompress_diffusers(options, console, interrupt_token());
    if (!pipeline) return fail("decompress", pipeline.status(), output, console, out);
    if (output.json) {
      print_json(out, diffusers_decompress_json(options, *pipeline));
    } else {
      console.result(diffusers_decompress_line(options, *pipeline));
    }
    return kExitOk;
  }
  auto summary = decompress_model(options, console, interrupt_token());
  if (!summary) return fail("decompress", summary.status(), output, console, out);
  if (output.json) {
    print_json(out, decompress_json(options, *summary));
  } else {
    console.result(decompress_summary_line(options, *summary));
  }
  return kExitOk;
}

int run_verify_command(const VerifyOptions& options, const OutputOptions& output, std::ostream& out,
                       std::ostream& err) {
  // With --json the failures are in the document, not printed one by one as well.
  struct JsonQuiet final : Reporter {
    explicit JsonQuiet(Console& c) : console(c) {}
    void warning(const std::string& line) override { console.warning(line); }
    void progress_start(const std::string& label, uint64_t total) override {
      console.progress_start(label, total);
    }
    void progress_advance(uint64_t n) override { console.progress_advance(n); }
    void progress_finish() override { console.progress_finish(); }
    int verbosity() const override { return 0; }
    Console& console;
  };
  Console console(out, err, output.verbosity, output.progress);
  JsonQuiet json_reporter(console);
  Reporter& reporter = output.json ? static_cast<Reporter&>(json_reporter) : console;
  auto report = is_diffusers_folder(options.df11_dir)
                    ? verify_diffusers(options, reporter, interrupt_token())
                    : verify_model(options, reporter, interrupt_token());
  if (!report) return fail("verify", report.status(), output, console, out);
  if (output.json) {
    print_json(out, verify_json(options, *report));
  } else {
    // Which decoder ran, and why, matters when it was asked for or when the user wants detail.
    if (console.verbosity() >= 2 || options.device == DeviceChoice::kCuda) {
      for (const std::string& note : report->device_notes) console.note(note);
    }
    for (const std::string& note : report->notes) console.note(note);
    console.result(verify_summary_line(options, *report));
  }
  if (report->ok()) return kExitOk;
  console.error("verification failed: " +
                (report->different_models.empty() ? "" : report->different_models + "; ") +
                count_of(report->failures.size(), "problem") +
                (output.json ? "" : " (listed above)"));
  return kExitDataError;
}

}  // namespace df11::app
