// Output of `df11 inspect`: aligned text tables for people, one JSON document for programs.
// Both carry the same numbers; JSON has every group's full code table, text shows those
// with -v (verbosity >= 2).
#pragma once

#include <ostream>
#include <string>

#include "df11/diffusers_folder.h"
#include "df11/inspect_report.h"

namespace df11::app {

// Sorts the report's groups, tensors and raw tensors by name as people count (natural_less:
// layers.9 before layers.10), the order both renderings list them in.
void order_for_people(InspectReport& report);

// verbosity 0: summary lines only; 1: group and tensor tables; 2: code tables and members.
void render_inspect_text(const InspectReport& report, int verbosity, std::ostream& out);

// One JSON document (2-space indent, final newline). Schema: see inspect_render.cpp.
void render_inspect_json(const InspectReport& report, std::ostream& out);

// A diffusers pipeline: a line naming the components, then each component's report (text),
// or one document {"command", "ok", "path", "kind": "pipeline", "components": [{"name", ...
// the component's report}], "not_inspected"} (JSON).
void render_diffusers_inspect_text(const std::string& path, const DiffusersInspectReport& report,
                                   int verbosity, std::ostream& out);
void render_diffusers_inspect_json(const std::string& path, const DiffusersInspectReport& report,
                                   std::ostream& out);

}  // namespace df11::app
