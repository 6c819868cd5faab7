// `df11 pull`, `df11 push`, `df11 publish` as functions of (options, out, err) -> exit code,
// like commands.h: a one-line summary (or one JSON object with --json) on `out`, progress and
// "error: ..." on `err`. The token never reaches either stream.
#pragma once

#include <ostream>

#include "commands.h"
#include "df11/hub_pipeline.h"  // pipeline/: the work

namespace df11::app {

int run_pull_command(const PullModelOptions& options, bool json, const OutputOptions& output,
                     std::ostream& out, std::ostream& err);
int run_push_command(const PushModelOptions& options, bool json, const OutputOptions& output,
                     std::ostream& out, std::ostream& err);
int run_publish_command(const PublishOptions& options, bool json, const OutputOptions& output,
                        std::ostream& out, std::ostream& err);

}  // namespace df11::app
