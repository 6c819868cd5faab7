#include "inspect_command.h"

#include <new>

#include "console.h"
#include "exit_codes.h"
#include "inspect_model.h"
#include "inspect_render.h"
#include "signals.h"

namespace df11::app {
namespace {

constexpr const char* kZstdBaseline = "zstd";

}  // namespace

int run_inspect(const InspectCommandOptions& options, std::ostream& out, std::ostream& err) {
  InspectOptions analysis;
  analysis.path = options.path;
  analysis.threads = options.threads;
  for (const std::string& b : options.baselines) {
    if (b != kZstdBaseline) {
      err << "error: unknown --baseline '" << b << "' (known: zstd)\n";
      return kExitUsage;
    }
    analysis.zstd = true;
  }
  if (options.path.empty()) {
    err << "error: inspect needs a PATH (a model folder or a .safetensors file)\n";
    return kExitUsage;
  }
  try {
    // Notes and warnings go to `err`; the report alone goes to `out`.
    Console console(out, err, options.verbosity, false);
    Result<InspectReport> report = inspect_model(analysis, console, interrupt_token());
    if (!report) {
      err << "error: " << report.status().to_string() << "\n";
      return exit_code_for(report.status());
    }
    if (options.json) {
      render_inspect_json(*report, out);
    } else {
      render_inspect_text(*report, options.verbosity, out);
    }
    out.flush();
    if (!out) {
      err << "error: cannot write the report (standard output closed or full)\n";
      return kExitOtherError;
    }
    return kExitOk;
  } catch (const std::bad_alloc&) {
    err << "error: resource_limit: out of memory\n";
    return kExitOtherError;
  } catch (const std::exception& e) {
    err << "error: internal: " << e.what() << "\n";
    return kExitOtherError;
  }
}

}  // namespace df11::app
