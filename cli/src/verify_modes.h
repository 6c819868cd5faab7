// The two kinds of folder verify handles (verify.h): written by df11 (with df11 metadata:
// checksums available) and published by the dfloat11 tools (none: structure + full decode).
#pragma once

#include <string>

#include "console.h"
#include "model_folder.h"
#include "rebuild.h"
#include "verify.h"

namespace df11::app {

struct VerifyContext {
  Console& console;
  VerifyReport& report;
  const ModelFolder* against = nullptr;  // --against, or null
  DecodeDevice device = DecodeDevice::kCpu;

  // Records and prints a finding; `line` names the tensor or file first.
  void fail(const std::string& line) {
    console.report("FAIL " + line);
    report.failures.push_back(line);
  }
};

Status verify_df11_folder(ModelFolder model, VerifyContext& context);
Status verify_published_folder(const ModelFolder& model, VerifyContext& context);

}  // namespace df11::app
