// A program that uses df11_format alone, as an engine that only reads containers would:
// it parses a safetensors header from a buffer in memory and finds a DF11 group's six stored
// tensors in it. It is linked with --no-as-needed, and the test link.format_without_crypto
// (check_no_crypto.cmake) fails if the binary needs libcrypto: df11_format must not pull in
// OpenSSL (SHA-256 lives in df11_sha256). Exit 0 only if the parse gives what was written.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "df11/group_tensors.h"
#include "df11/safetensors.h"

int main() {
  using df11::Dtype;
  df11::SafetensorsLayout layout;
  const std::vector<std::pair<std::string, Dtype>> six = {
      {"m.luts", Dtype::kU8},          {"m.encoded_exponent", Dtype::kU8},
      {"m.sign_mantissa", Dtype::kU8}, {"m.output_positions", Dtype::kU8},
      {"m.gaps", Dtype::kU8},          {"m.split_positions", Dtype::kI64}};
  for (const auto& [name, dtype] : six) {
    const bool luts = name == "m.luts";
    const std::vector<uint64_t> shape = luts
                                            ? std::vector<uint64_t>{2, 256}
                                            : std::vector<uint64_t>{dtype == Dtype::kI64 ? 0u : 8u};
    const uint64_t bytes = luts ? 512 : (dtype == Dtype::kI64 ? 0 : 8);
    if (!layout.add_tensor(name, dtype, shape, bytes)) return 1;
  }
  auto finalized = layout.finalize();
  if (!finalized) {
    std::fprintf(stderr, "%s\n", finalized.status().message().c_str());
    return 1;
  }
  std::vector<uint8_t> file = finalized->prefix;
  file.resize(finalized->file_size, 0);
  auto header = df11::parse_safetensors(file, "buffer");
  if (!header) {
    std::fprintf(stderr, "%s\n", header.status().message().c_str());
    return 1;
  }
  auto groups = df11::enumerate_groups(*header);
  if (!groups || groups->size() != 1 || (*groups)[0].name != "m" ||
      header->tensors.size() != six.size()) {
    std::fprintf(stderr, "parsed header does not hold the one group written\n");
    return 1;
  }
  std::printf("parsed %zu tensors, group '%s', without libcrypto\n", header->tensors.size(),
              (*groups)[0].name.c_str());
  return 0;
}
