#include "df11/verify.h"

#include <cstdio>

#include "df11/df11_folder.h"
#include "df11/model_folder.h"
#include "thread_limit.h"
#include "verify_modes.h"
#if defined(DF11_HAVE_CUDA)
#include "df11/cuda_decoder.h"
#endif

namespace df11::app {
namespace {

Result<DecodeDevice> resolve_device(DeviceChoice choice, std::vector<std::string>* notes) {
  if (choice == DeviceChoice::kCpu) return DecodeDevice::kCpu;
#if defined(DF11_HAVE_CUDA)
  std::string why;
  if (cuda::device_available(&why)) return DecodeDevice::kCuda;
  if (choice == DeviceChoice::kCuda) {
    return Status(ErrorCode::kCuda, "--device cuda: no usable CUDA device: " + why);
  }
  notes->push_back("no usable CUDA device (" + why + "): decoding on the CPU");
  return DecodeDevice::kCpu;
#else
  if (choice == DeviceChoice::kCuda) {
    return Status(ErrorCode::kUnsupported, "--device cuda: this df11 was built without CUDA");
  }
  notes->push_back("built without CUDA: decoding on the CPU");
  return DecodeDevice::kCpu;
#endif
}

Result<VerifyReport> verify_model_limited(const VerifyOptions& options, Reporter& reporter,
                                          const CancelToken& cancel) {
  VerifyReport report;
  DF11_ASSIGN_OR_RETURN(ModelFolder model, open_model_folder(options.df11_dir, cancel));
  std::optional<ModelFolder> against;
  if (options.against) {
    // A folder, or the single .safetensors file a checkpoint was compressed from.
    DF11_ASSIGN_OR_RETURN(against.emplace(), open_model_path(*options.against, cancel));
  }
  DF11_ASSIGN_OR_RETURN(DecodeDevice device, resolve_device(options.device, &report.device_notes));
  report.device = device == DecodeDevice::kCuda ? "cuda" : "cpu";
  VerifyContext context(reporter, cancel, report, against ? &*against : nullptr, device,
                        options.parallel_files, options.file_sha256, options.folder_sha256);
  context.on_folder_digest = options.on_folder_digest;
  context.here = options.df11_dir.string();
  report.files_sha256 = options.file_sha256;
  if (written_by_df11(model)) {
    DF11_RETURN_IF_ERROR(verify_df11_folder(std::move(model), context));
  } else {
    DF11_RETURN_IF_ERROR(verify_published_folder(model, context));
  }
  return report;
}

// "'name'" at the start of `text`: the name, and where the text goes on after the quote.
bool quoted_name(std::string_view text, std::string& name, size_t& after) {
  if (text.empty() || text[0] != '\'') return false;
  const size_t end = text.find('\'', 1);
  if (end == std::string_view::npos) return false;
  name = std::string(text.substr(1, end - 1));
  after = end + 1;
  return true;
}

}  // namespace

Finding make_finding(ErrorCode code, std::string message) {
  Finding f;
  f.code = code;
  std::string_view text = message;
  size_t after = 0;
  if (text.rfind("tensor ", 0) == 0 && quoted_name(text.substr(7), f.tensor, after)) {
    // "tensor 'T' (FILE: group 'G'): ..." or "tensor 'T' of DIR is missing ..."
    std::string_view rest = text.substr(7 + after);
    if (rest.rfind(" (", 0) == 0) {
      const size_t colon = rest.find(": group ");
      if (colon != std::string_view::npos) {
        f.file = std::string(rest.substr(2, colon - 2));
        quoted_name(rest.substr(colon + 8), f.group, after);
      }
    }
  } else if (const size_t colon = text.find(": ");
             colon != std::string_view::npos && colon > 0 &&
             text.substr(0, colon).find(' ') == std::string_view::npos) {
    // "FILE: ..." then, optionally, "group 'G': member 'T'", "group 'G'" or "tensor 'T'".
    f.file = std::string(text.substr(0, colon));
    std::string_view rest = text.substr(colon + 2);
    if (rest.rfind("group ", 0) == 0 && quoted_name(rest.substr(6), f.group, after)) {
      rest = rest.substr(6 + after);
      if (rest.rfind(": member ", 0) == 0) quoted_name(rest.substr(9), f.tensor, after);
    } else if (rest.rfind("tensor ", 0) == 0) {
      quoted_name(rest.substr(7), f.tensor, after);
    }
  }
  f.message = std::move(message);
  return f;
}

Result<VerifyReport> verify_model(const VerifyOptions& options, Reporter& reporter,
                                  const CancelToken& cancel) {
  return run_with_thread_limit(options.threads,
                               [&] { return verify_model_limited(options, reporter, cancel); });
}

}  // namespace df11::app
