// What `df11 inspect` learns about a checkpoint, independent of how it is printed: per group,
// where the stored bytes go, the code and its entropy; per tensor (BF16 checkpoints), the
// predicted DF11 size; optional zstd baselines on the same bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "df11/dtype.h"
#include "df11/dtype_shares.h"
#include "df11/encoder.h"

namespace df11::app {

// Bytes of a group's six stored tensors (spec 3.2).
struct PartBytes {
  uint64_t encoded_exponent = 0;
  uint64_t sign_mantissa = 0;
  uint64_t luts = 0;
  uint64_t gaps = 0;
  uint64_t output_positions = 0;
  uint64_t split_positions = 0;

  // Everything but the two per-weight streams: what the geometry and tables cost.
  uint64_t overhead() const { return luts + gaps + output_positions + split_positions; }
  uint64_t total() const { return encoded_exponent + sign_mantissa + overhead(); }
};

// The sizes plan_group() computed for a group (exact: what encode_group() will write).
PartBytes part_bytes_of_plan(const GroupPlan& plan);

// One exponent value of a group's code.
struct CodeSymbol {
  uint32_t exponent =
      0;                // BF16 exponent field; the weight's magnitude is in [2^(e-127), 2^(e-126))
  uint64_t count = 0;   // weights with this exponent
  uint32_t length = 0;  // code length in bits (0: not in the code)
};

struct CodeStats {
  Histogram counts{};                  // weights per exponent value
  std::array<uint8_t, 256> lengths{};  // code length per exponent (0: no code)
  uint32_t n_luts = 0;                 // lookup table rows (spec 3.3)
  uint64_t n_weights = 0;
  uint64_t coded_bits = 0;  // sum of count * length: the exponent stream's payload
  double entropy_bits = 0;  // Shannon entropy of `counts`, bits per weight

  uint32_t max_length() const;
  double mean_length_bits() const;  // coded_bits / n_weights
  // Exponents with a count or a code, ascending.
  std::vector<CodeSymbol> symbols() const;
};

CodeStats make_code_stats(const Histogram& counts, const std::array<uint8_t, 256>& lengths,
                          uint32_t n_luts);

// zstd on a tensor's raw bytes at one level.
struct ZstdResult {
  uint64_t input_bytes = 0;   // bytes compressed (a prefix of the tensor when sampled)
  uint64_t output_bytes = 0;  // compressed size (frame headers included)
  bool sampled = false;       // input_bytes < the tensor's size
  double ratio() const {
    return input_bytes ? static_cast<double>(output_bytes) / static_cast<double>(input_bytes) : 1;
  }
  ZstdResult& operator+=(const ZstdResult& other);
};

struct ZstdBaseline {
  ZstdResult fast;    // kZstdFastLevel
  ZstdResult strong;  // kZstdStrongLevel
  ZstdBaseline& operator+=(const ZstdBaseline& other) {
    fast += other.fast;
    strong += other.strong;
    return *this;
  }
};

struct MemberReport {
  std::string name;  // empty when unknown (a DF11 file without df11 metadata or pattern match)
  std::vector<uint64_t> shape;  // empty when unknown
  uint64_t n_elements = 0;
};

// One DF11 group: found in a DF11 file, or predicted for a BF16 checkpoint.
struct GroupReport {
  std::string name;  // module path P
  std::string file;  // shard holding it (its first member's shard, when predicted)
  std::vector<MemberReport> members;
  uint64_t n_elements = 0;
  bool coded = true;       // predicted groups: false when df11 compress stores them unchanged
  std::string raw_reason;  // why not coded
  PartBytes bytes;         // stored (DF11 file) or predicted (exact) sizes; zero when not coded
  CodeStats code;
  // False when no exponent was counted (a remote DF11 group: its sizes come from the header,
  // its counts would need the whole stream decoded): entropy, bound and code unknown.
  bool counts_known = true;
  uint64_t max_block_weights = 0;        // weights whose code starts in the fullest block
  bool max_block_weights_exact = false;  // false: an upper bound from the shortest code
  std::optional<ZstdBaseline> zstd;

  uint64_t bf16_bytes() const { return 2 * n_elements; }
  double ratio() const;          // bytes.total() / bf16_bytes(); 1 when not coded
  double entropy_ratio() const;  // (entropy + 8) / 16: exponents at their entropy, no overhead
  double bound_ratio() const;    // exponents at their entropy plus this group's real overhead
  bool compatible() const { return max_block_weights <= kMaxWeightsPerBlockCompat; }
  // spec 5.3 G8: non-empty for a tied copy (the group codes this tensor again for the
  // loader); it counts in the stored bytes only.
  std::string alias_of;
};

// A tensor of a BF16 checkpoint, with DF11's prediction for it alone (as a group of its own,
// `df11 compress --group-by tensor`) when it is a coded candidate.
struct TensorReport {
  std::string name;
  std::string file;
  Dtype dtype = Dtype::kU8;
  std::vector<uint64_t> shape;
  uint64_t n_elements = 0;
  uint64_t bytes = 0;
  std::string group;  // the block-mode group it joins; empty: stored unchanged
  std::optional<GroupReport> alone;
  std::optional<ZstdBaseline> zstd;
};

// A tensor that DF11 stores (or would store) unchanged.
struct RawTensorReport {
  std::string name;
  std::string file;
  Dtype dtype = Dtype::kU8;
  uint64_t bytes = 0;
};

struct FileReport {
  std::string file;
  uint64_t size = 0;
  uint64_t n_tensors = 0;
};

enum class CheckpointKind {
  kBf16,            // a plain checkpoint: sizes are predicted
  kDf11,            // DF11 files with df11 metadata (this tool's output)
  kDf11NoMetadata,  // DF11 files without it (e.g. published dfloat11 models)
};
const char* checkpoint_kind_name(CheckpointKind kind);  // "bf16", "df11", "df11-no-metadata"

// How a remote repo was read (inspect of a Hub id): HTTP Range requests on the shards'
// headers and, for a BF16 repo, on a sample of every group's weights; nothing else.
struct RemoteRead {
  std::string repo;           // "org/name"
  std::string revision;       // as asked
  std::string commit;         // resolved
  uint64_t repo_bytes = 0;    // every file of the repo at that commit
  uint64_t bytes_read = 0;    // response bytes kept: side files, headers, samples
  uint64_t requests = 0;      // HTTP requests for those bytes (redirects and retries included)
  uint64_t sample_bytes = 0;  // weight bytes sampled (BF16 repos; part of bytes_read)
  uint64_t sample_bytes_per_group = 0;  // the budget each coded group's sample shares
  uint64_t sampled_groups = 0;
};

struct InspectReport {
  std::string path;
  CheckpointKind kind = CheckpointKind::kBf16;
  std::vector<FileReport> files;
  std::vector<GroupReport> groups;
  std::vector<TensorReport> tensors;  // kBf16 only
  std::vector<RawTensorReport> raw;
  std::vector<std::string> notes;    // warnings worth reading (groups left raw, ...)
  std::vector<DtypeShare> dtypes;    // every tensor's dtype, most bytes first
  uint64_t original_file_bytes = 0;  // kDf11: sizes of the original files, when all known
  bool zstd = false;                 // baselines computed
  // Set for a Hub repo read remotely. kBf16: group sizes are predicted from the sampled
  // exponents (GroupReport::code counts the sample), not computed from every weight; kDf11:
  // sizes are the stored ones, exponent counts are unknown (counts_known false).
  std::optional<RemoteRead> remote;
};

// Sums over the coded groups (what the DF11 ratio is about) and over the whole model.
struct InspectTotals {
  uint64_t n_groups_coded = 0;
  uint64_t coded_weights = 0;
  uint64_t coded_bf16_bytes = 0;
  uint64_t coded_stored_bytes = 0;
  PartBytes parts;                   // coded groups' parts summed
  double bound_bytes = 0;            // coded groups at their entropy plus overhead
  double entropy_bits = 0;           // weight-averaged over the coded groups
  uint64_t raw_bytes = 0;            // tensors stored unchanged
  uint64_t tied_copy_bytes = 0;      // stored bytes of tied copies (GroupReport::alias_of)
  std::optional<ZstdBaseline> zstd;  // over the coded groups' bytes
  bool counts_known = true;          // every coded group's exponents were counted

  double coded_ratio() const;
  double bound_ratio() const;
  uint64_t model_original_bytes() const { return coded_bf16_bytes + raw_bytes; }
  uint64_t model_stored_bytes() const { return coded_stored_bytes + raw_bytes + tied_copy_bytes; }
  double model_ratio() const;
};

InspectTotals compute_totals(const InspectReport& report);

}  // namespace df11::app
