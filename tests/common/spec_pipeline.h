// Reading a one-file DF11 shard the way spec/DF11.md orders the checks: container (spec 6.3),
// df11 metadata (5.3), the metadata against the file (5.4, 3.2), stored checksums (5.2).
// Header-only: only test binaries that link df11_format include it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "df11/group_tensors.h"
#include "df11/hash.h"
#include "df11/metadata.h"
#include "df11/safetensors.h"
#include "df11/status.h"
#include "spec_vectors.h"

namespace df11::test {

// Everything read from a shard. GroupTensors point into `header`: keep the object in place
// (it is handed out by unique_ptr).
struct LoadedShard {
  std::string file_name;
  std::vector<uint8_t> bytes;
  SafetensorsHeader header;
  Df11Metadata metadata;
  std::vector<GroupTensors> groups;  // in metadata order

  GroupView view(size_t group) const { return group_view(groups[group], bytes); }
  // "worked_tiny.safetensors: group 'lm_head'", as the CLI names a group in messages.
  std::string what(size_t group) const {
    return file_name + ": group '" + groups[group].name + "'";
  }
};

// The stage that reported an error, for failure messages (spec/vectors/*.json "stage").
struct StageStatus {
  std::string stage;  // "parse", "metadata", "checksum"; empty when OK
  Status status;
};

// spec 5.2: each stored tensor's xxh3 against the df11 metadata (kCorruptData on mismatch).
inline Status check_stored_checksums(const LoadedShard& shard, size_t group) {
  const GroupMeta& meta = shard.metadata.groups[group];
  const GroupView v = shard.view(group);
  for (const GroupTensorSpec& t : kGroupTensors) {
    const std::string actual = xxh3_hex(v.part(t.id));
    if (actual != meta.stored.of(t.id)) {
      return Status(ErrorCode::kCorruptData,
                    shard.what(group) + ": stored tensor '" + group_tensor_name(meta.name, t.id) +
                        "' has xxh3 " + actual + ", the df11 metadata records " +
                        meta.stored.of(t.id));
    }
  }
  return Status::ok();
}

// Reads and checks the shard at `path` up to (and including) the stored checksums.
inline StageStatus load_shard(const std::filesystem::path& path,
                              std::unique_ptr<LoadedShard>* out) {
  auto shard = std::make_unique<LoadedShard>();
  shard->file_name = path.filename().string();
  shard->bytes = read_spec_file(path);

  Result<SafetensorsHeader> header = parse_safetensors(shard->bytes, shard->file_name);
  if (!header) return {"parse", header.status()};
  shard->header = std::move(header).value();

  Result<std::optional<Df11Metadata>> meta = read_df11_metadata(shard->header);
  if (!meta) return {"metadata", meta.status()};
  if (!meta->has_value()) {
    return {"metadata",
            Status(ErrorCode::kBadMetadata, shard->file_name + ": no \"df11\" __metadata__ entry")};
  }
  shard->metadata = std::move(**meta);

  Result<std::vector<GroupTensors>> groups =
      check_metadata_against_header(shard->metadata, shard->header);
  if (!groups) return {"metadata", groups.status()};
  shard->groups = std::move(groups).value();

  for (size_t g = 0; g < shard->groups.size(); ++g) {
    Status s = check_stored_checksums(*shard, g);
    if (!s) return {"checksum", s};
  }
  *out = std::move(shard);
  return {"", Status::ok()};
}

// Little-endian BF16 bytes -> patterns.
inline std::vector<uint16_t> bf16_from_le_bytes(std::span<const uint8_t> bytes) {
  std::vector<uint16_t> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
  }
  return out;
}

// Patterns -> little-endian BF16 bytes.
inline std::vector<uint8_t> le_bytes_from_bf16(std::span<const uint16_t> w) {
  std::vector<uint8_t> out(2 * w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    out[2 * i] = static_cast<uint8_t>(w[i]);
    out[2 * i + 1] = static_cast<uint8_t>(w[i] >> 8);
  }
  return out;
}

}  // namespace df11::test
