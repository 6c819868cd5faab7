// Fuzz target: parse_safetensors() on arbitrary bytes.
//
// Properties: parsing never crashes, leaks or reads out of bounds; a header that parses
// satisfies spec 2.3's invariants (tensors tile the data buffer in order); re-serializing it
// with SafetensorsLayout and parsing again gives the same tensors, metadata and bytes; the
// DF11 helpers (group enumeration, df11 metadata) accept or reject it without crashing;
// parse_safetensors_header on its first 8 + N bytes gives the same header, and on any prefix
// never reads past it.
#include <cstdio>
#include <cstdlib>
#include <span>

#include "df11/metadata.h"
#include "df11/safetensors.h"
#include "fuzz_check.h"

namespace {

void check_invariants(const df11::SafetensorsHeader& h, size_t size) {
  FUZZ_CHECK(h.file_size == size);
  FUZZ_CHECK(h.data_start + h.data_size == size);
  FUZZ_CHECK(h.header_text.size() + df11::kHeaderLengthBytes == h.data_start);
  FUZZ_CHECK(h.index.size() == h.tensors.size());
  uint64_t expected = 0;
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    const df11::TensorInfo& t = h.tensors[i];
    FUZZ_CHECK(t.data_offset_begin == expected);
    FUZZ_CHECK(t.data_offset_end >= t.data_offset_begin);
    FUZZ_CHECK(t.file_offset == h.data_start + t.data_offset_begin);
    FUZZ_CHECK(h.index.at(t.name) == i);
    expected = t.data_offset_end;
  }
  FUZZ_CHECK(expected == h.data_size);
}

void check_round_trip(const df11::SafetensorsHeader& h, std::span<const uint8_t> bytes) {
  std::vector<df11::TensorData> tensors;
  for (const df11::TensorInfo& t : h.tensors) {
    tensors.push_back({t.name, t.dtype, t.shape, bytes.subspan(t.file_offset, t.byte_size())});
  }
  df11::Result<std::vector<uint8_t>> again =
      df11::serialize_safetensors(tensors, h.has_metadata ? &h.metadata : nullptr);
  // Compact output is never longer than the (valid) input header: this cannot fail.
  FUZZ_CHECK(again.is_ok());
  df11::Result<df11::SafetensorsHeader> h2 = df11::parse_safetensors(*again, "round_trip");
  FUZZ_CHECK(h2.is_ok());
  FUZZ_CHECK(h2->data_start % df11::kHeaderAlignment == 0);
  FUZZ_CHECK(h2->has_metadata == h.has_metadata);
  FUZZ_CHECK(h2->metadata == h.metadata);
  FUZZ_CHECK(h2->tensors.size() == h.tensors.size());
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    const df11::TensorInfo& a = h.tensors[i];
    const df11::TensorInfo& b = h2->tensors[i];
    FUZZ_CHECK(a.name == b.name && a.dtype == b.dtype && a.shape == b.shape);
    FUZZ_CHECK(a.n_elements == b.n_elements);
    FUZZ_CHECK(a.data_offset_begin == b.data_offset_begin);
    FUZZ_CHECK(a.data_offset_end == b.data_offset_end);
  }
  FUZZ_CHECK(std::equal(again->begin() + h2->data_start, again->end(), bytes.begin() + h.data_start,
                        bytes.end()));
}

void check_df11_helpers(const df11::SafetensorsHeader& h, std::span<const uint8_t> bytes) {
  df11::Result<std::vector<df11::GroupTensors>> groups = df11::enumerate_groups(h);
  if (groups.is_ok()) {
    for (const df11::GroupTensors& g : *groups) {
      const df11::GroupView v = df11::group_view(g, bytes);
      FUZZ_CHECK(v.sign_mantissa.size() == g.n_elements());
      FUZZ_CHECK(v.luts.size() % df11::kLutRowSize == 0);
    }
  } else {
    FUZZ_CHECK(!groups.status().message().empty());
  }
  // A folder of this one shard has the same groups, each wholly in it (spec 7.8).
  const df11::SafetensorsHeader* headers[] = {&h};
  df11::Result<std::vector<df11::FolderGroup>> folder = df11::enumerate_folder_groups(headers, "");
  FUZZ_CHECK(folder.is_ok() == groups.is_ok());
  if (folder.is_ok()) {
    FUZZ_CHECK(folder->size() == groups->size());
    for (size_t i = 0; i < folder->size(); ++i) {
      FUZZ_CHECK((*folder)[i].tensors.all() == (*groups)[i].all());
      for (size_t f : (*folder)[i].file_of) FUZZ_CHECK(f == 0);
    }
  }
  df11::Result<std::optional<df11::Df11Metadata>> meta = df11::read_df11_metadata(h);
  if (meta.is_ok() && meta->has_value()) {
    df11::Result<std::vector<df11::GroupTensors>> checked =
        df11::check_metadata_against_header(**meta, h);
    FUZZ_CHECK(checked.is_ok() || !checked.status().message().empty());
  }
}

// parse_safetensors_header (remote inspect: the first 8 + N bytes and the size only) agrees
// with the whole-file parse.
void check_prefix_parse(const df11::SafetensorsHeader& h, std::span<const uint8_t> bytes) {
  df11::Result<df11::SafetensorsHeader> p =
      df11::parse_safetensors_header(bytes.first(h.data_start), bytes.size(), "fuzz.safetensors");
  FUZZ_CHECK(p.is_ok());
  FUZZ_CHECK(p->header_text == h.header_text && p->metadata == h.metadata);
  FUZZ_CHECK(p->tensors.size() == h.tensors.size());
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    FUZZ_CHECK(p->tensors[i].name == h.tensors[i].name);
    FUZZ_CHECK(p->tensors[i].file_offset == h.tensors[i].file_offset);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  // Any prefix with any claimed size: an answer, never a read past the prefix.
  const df11::Result<df11::SafetensorsHeader> cut =
      df11::parse_safetensors_header(bytes.first(size / 2), size + (size & 7), "fuzz.safetensors");
  FUZZ_CHECK(cut.is_ok() || cut.status().message().rfind("fuzz.safetensors: ", 0) == 0);
  df11::Result<df11::SafetensorsHeader> h = df11::parse_safetensors(bytes, "fuzz.safetensors");
  if (!h.is_ok()) {
    FUZZ_CHECK(h.status().code() != df11::ErrorCode::kOk);
    FUZZ_CHECK(h.status().message().rfind("fuzz.safetensors: ", 0) == 0);
    return 0;
  }
  check_invariants(*h, size);
  check_round_trip(*h, bytes);
  check_df11_helpers(*h, bytes);
  check_prefix_parse(*h, bytes);
  return 0;
}
