#include "inspect_command.h"

#include <new>

#include "commands.h"
#include "console.h"
#include "df11/diffusers_folder.h"
#include "df11/inspect_model.h"
#include "df11/inspect_remote.h"
#include "exit_codes.h"
#include "inspect_render.h"
#include "signals.h"
#include "summary_text.h"

namespace df11::app {
namespace {

constexpr const char* kZstdBaseline = "zstd";

// The error line on `err` and, with --json, the error document on `out`.
int inspect_failure(const InspectCommandOptions& options, const Status& status, std::ostream& out,
                    std::ostream& err) {
  if (options.json) {
    out << error_json("inspect", status)
               .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
        << "\n";
  }
  err << "error: " << error_line(status) << "\n";
  return exit_code_for(status);
}

}  // namespace

int run_inspect(const InspectCommandOptions& options, std::ostream& out, std::ostream& err) {
  InspectOptions analysis;
  analysis.path = options.path;
  analysis.threads = options.threads;
  for (const std::string& b : options.baselines) {
    if (b != kZstdBaseline) {
      return inspect_failure(
          options,
          Status(ErrorCode::kInvalidArgument, "unknown --baseline '" + b + "' (known: zstd)"), out,
          err);
    }
    analysis.zstd = true;
  }
  if (options.path.empty()) {
    return inspect_failure(options,
                           Status(ErrorCode::kInvalidArgument,
                                  "inspect needs a PATH (a model folder or a .safetensors file)"),
                           out, err);
  }
  try {
    // Notes and warnings go to `err`; the report alone goes to `out`.
    Console console(out, err, options.verbosity, false);
    RemoteInspectOptions remote;
    remote.repo = options.path;
    remote.transfers = options.transfers;
    if (!options.remote && is_diffusers_folder(options.path)) {
      auto pipeline = inspect_diffusers(analysis, console, interrupt_token());
      if (!pipeline) return inspect_failure(options, pipeline.status(), out, err);
      for (InspectReport& r : pipeline->reports) order_for_people(r);
      if (options.json) {
        render_diffusers_inspect_json(options.path, *pipeline, out);
      } else if (options.verbosity >= 1) {
        render_diffusers_inspect_text(options.path, *pipeline, options.verbosity, out);
      }
      out.flush();
      return out ? kExitOk : kExitOtherError;
    }
    Result<InspectReport> report = options.remote
                                       ? inspect_remote(remote, console, interrupt_token())
                                       : inspect_model(analysis, console, interrupt_token());
    if (!report) return inspect_failure(options, report.status(), out, err);
    order_for_people(*report);
    if (options.json) {
      render_inspect_json(*report, out);
    } else if (options.verbosity >= 1) {  // -q: errors and warnings only
      render_inspect_text(*report, options.verbosity, out);
    }
    out.flush();
    if (!out) {
      err << "error: cannot write the report (standard output closed or full) [io]\n";
      return kExitOtherError;
    }
    return kExitOk;
  } catch (const std::bad_alloc&) {
    err << "error: out of memory [resource_limit]\n";
    return kExitOtherError;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << " [internal]\n";
    return kExitOtherError;
  }
}

}  // namespace df11::app
