// What compress, decompress and verify print when they end: one summary line for people, or
// one JSON document (--json) with the same figures, for scripts.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "df11/compress.h"
#include "df11/decompress.h"
#include "df11/diffusers_folder.h"
#include "df11/status.h"
#include "df11/verify.h"

namespace df11::app {

// "compressed M -> O: 16.06 GB -> 10.94 GB (68.1%; coded weights 67.7%), 32 groups ..."
std::string compress_summary_line(const CompressOptions& options, const CompressSummary& s);
// "restored D -> O: 2 files (58 tensors, xxh3 checked) + 3 other files, ..."
std::string decompress_summary_line(const DecompressOptions& options, const DecompressSummary& s);
// "verify D (cpu): OK: 5 groups decoded, ..." or "... FAILED: 2 problems; ..."
std::string verify_summary_line(const VerifyOptions& options, const VerifyReport& report);

nlohmann::ordered_json compress_json(const CompressOptions& options, const CompressSummary& s);
nlohmann::ordered_json decompress_json(const DecompressOptions& options,
                                       const DecompressSummary& s);
nlohmann::ordered_json verify_json(const VerifyOptions& options, const VerifyReport& report);
// Diffusers pipelines: one line per coded component, then the pipeline's
// ("compressed pipeline P -> O: 2 components coded ..."); its JSON nests each component's.
std::vector<std::string> diffusers_compress_lines(const CompressOptions& options,
                                                  const DiffusersCompressSummary& s);
std::string diffusers_decompress_line(const DecompressOptions& options,
                                      const DiffusersDecompressSummary& s);
nlohmann::ordered_json diffusers_compress_json(const CompressOptions& options,
                                               const DiffusersCompressSummary& s);
nlohmann::ordered_json diffusers_decompress_json(const DecompressOptions& options,
                                                 const DiffusersDecompressSummary& s);

// {"command": ..., "ok": false, "error": {"code": "bad_offsets", "message": ...}}
nlohmann::ordered_json error_json(const std::string& command, const Status& status);

}  // namespace df11::app
