// `df11 inspect ORG/NAME`: the inspect report of a Hub repo without downloading its weights.
//
// Reads, with HTTP Range requests (df11_hub: the resolve URL and its CDN redirect, as pull),
// config.json and the index whole, each shard's 8-byte header length and then its header,
// and for a BF16 repo a bounded sample of every coded group's weights (a slice from the
// middle of each member, at most kRemoteSampledMembersPerGroup of them, in proportion to its
// size). From the headers:
//  - DF11 repo: the groups and their stored sizes exactly (the header gives every part's
//    bytes); exponent counts, entropy and code table are unknown (they need the whole
//    exponent stream decoded).
//  - BF16 repo: the groups df11 compress would make (its own grouping from the names), their
//    BF16 sizes exactly, and their DF11 sizes *predicted*: a Huffman code built from the
//    sample's exponent histogram (predict_group_plan), its mean code length times the
//    group's weights. Inf/NaN outside the sample, and the exact fullest block, are unknown.
#pragma once

#include <cstdint>
#include <string>

#include "df11/cancel.h"
#include "df11/inspect_report.h"
#include "df11/reporter.h"
#include "df11/status.h"

namespace df11::app {

// Weight bytes sampled per coded group (shared by its members in proportion to their size),
// at most kRemoteSampleBytesTotal over the repo, at least kRemoteSampleBytesPerMember per
// member (or the whole member when smaller).
inline constexpr uint64_t kRemoteSampleBytesPerGroup = 64 << 10;
inline constexpr uint64_t kRemoteSampleBytesTotal = 16 << 20;
inline constexpr uint64_t kRemoteSampleBytesPerMember = 1 << 10;
// Members sampled per group (one request each), evenly spaced through the group: a dense
// block's 7 matrices are all sampled, a MoE block's hundreds of experts are not all asked for.
inline constexpr size_t kRemoteSampledMembersPerGroup = 8;

struct RemoteInspectOptions {
  std::string repo;   // "org/name[@revision]"
  int transfers = 8;  // parallel requests
  uint64_t sample_bytes_per_group = kRemoteSampleBytesPerGroup;
};

// The report (report.remote set). Errors: the Hub's (kNotFound for a missing repo,
// kUnsupported when the server ignores Range, ...), a shard header's parse error naming
// "org/name/file", kNotFound when the repo has no top-level *.safetensors.
Result<InspectReport> inspect_remote(const RemoteInspectOptions& options, Reporter& reporter,
                                     const CancelToken& cancel);

}  // namespace df11::app
