// Bits per weight of one Llama-3.1-8B block (q, k, v, o, gate, up, down: 218,103,808 weights,
// N(0, 0.02^2) rounded to BF16, a fixed seed) in DF11 (one group, as `df11 compress` codes a
// block), the 12-bit execution layout and the compact execution layout (spec/EXEC_COMPACT.md),
// the compact one also decoded back and compared bit for bit. Prints one JSON line (sizes in
// bytes and bits per weight), and writes it to --json OUT too.
//
//   exec_size [--rows-scale N] [--json OUT]
//
// --rows-scale N divides every matrix's rows by N (a quicker, smaller sample of the same shapes).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "df11/encoder.h"
#include "df11/exec_compact_encode.h"
#include "df11/exec_decode.h"
#include "df11/exec_encode.h"

namespace {

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

int fail(const std::string& what, const df11::Status& s) {
  std::fprintf(stderr, "exec_size: %s: %s\n", what.c_str(), s.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t scale = 1;
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rows-scale" && i + 1 < argc) {
      scale = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: exec_size [--rows-scale N] [--json OUT]\n");
      return 2;
    }
  }
  if (scale == 0) scale = 1;
  const char* names[7] = {"q", "k", "v", "o", "gate", "up", "down"};
  const uint32_t shapes[7][2] = {{4096, 4096},  {1024, 4096},  {1024, 4096}, {4096, 4096},
                                 {14336, 4096}, {14336, 4096}, {4096, 14336}};
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<std::vector<uint16_t>> mats(7);
  uint64_t n = 0;
  for (int m = 0; m < 7; ++m) {
    mats[m].resize(uint64_t{shapes[m][0] / scale} * shapes[m][1]);
    for (uint16_t& w : mats[m]) w = to_bf16(dist(rng));
    n += mats[m].size();
  }
  // DF11: the block as one group (its coded exponents, sign/mantissa bytes, gaps, output
  // positions and tables: what a df11 folder stores for it, less its JSON metadata).
  std::vector<std::span<const uint16_t>> members(mats.begin(), mats.end());
  const auto plan = df11::plan_group(members);
  if (!plan.is_ok()) return fail("plan_group", plan.status());
  const uint64_t df11_bytes =
      plan->n_bytes + n + plan->gaps_bytes + plan->output_positions_bytes + plan->luts.size();
  uint64_t exec_bytes = 0, compact_bytes = 0, stream_bits = 0;
  std::vector<uint16_t> back;
  for (int m = 0; m < 7; ++m) {
    const uint32_t rows = shapes[m][0] / scale, cols = shapes[m][1];
    const auto e = df11::encode_exec_matrix(mats[m], rows, cols, names[m]);
    if (!e.is_ok()) return fail(names[m], e.status());
    const auto c = df11::encode_compact_matrix(mats[m], rows, cols, names[m]);
    if (!c.is_ok()) return fail(names[m], c.status());
    back.assign(mats[m].size(), 0);
    const df11::Status s = df11::decode_compact_matrix(*c, back, names[m]);
    if (!s.is_ok()) return fail(names[m], s);
    if (back != mats[m])
      return fail(names[m], df11::Status(df11::ErrorCode::kCorruptData, "differs"));
    exec_bytes += e->size();
    compact_bytes += c->size();
    stream_bits += df11::read_compact_header(*c, names[m])->stream_bits;
  }
  const auto bits = [&](uint64_t bytes) {
    return 8.0 * static_cast<double>(bytes) / static_cast<double>(n);
  };
  char line[1024];
  std::snprintf(
      line, sizeof line,
      "{\"weights\": %llu, \"rows_scale\": %u, \"df11_bytes\": %llu, \"df11_bits\": %.5f, "
      "\"df11_exponent_code_bits\": %.5f, \"entropy_bits\": %.5f, \"exec12_bytes\": %llu, "
      "\"exec12_bits\": %.5f, \"compact_bytes\": %llu, \"compact_bits\": %.5f, "
      "\"compact_stream_bits\": %.5f}\n",
      static_cast<unsigned long long>(n), scale, static_cast<unsigned long long>(df11_bytes),
      bits(df11_bytes), static_cast<double>(plan->n_bits) / static_cast<double>(n),
      plan->entropy_bits, static_cast<unsigned long long>(exec_bytes), bits(exec_bytes),
      static_cast<unsigned long long>(compact_bytes), bits(compact_bytes),
      static_cast<double>(stream_bits) / static_cast<double>(n));
  std::fputs(line, stdout);
  if (json) {
    FILE* f = std::fopen(json, "w");
    if (!f || std::fputs(line, f) < 0 || std::fclose(f) != 0) {
      return fail(json, df11::Status(df11::ErrorCode::kIo, "cannot write"));
    }
  }
  return 0;
}
