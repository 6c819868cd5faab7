#include "df11/inspect_report.h"

#include <algorithm>
#include <cmath>

namespace df11::app {
namespace {

double safe_ratio(double num, double den) { return den > 0 ? num / den : 1.0; }

}  // namespace

PartBytes part_bytes_of_plan(const GroupPlan& plan) {
  PartBytes b;
  b.encoded_exponent = plan.n_bytes;
  b.sign_mantissa = plan.n_elements;
  b.luts = plan.luts.size();
  b.gaps = plan.gaps_bytes;
  b.output_positions = plan.output_positions_bytes;
  b.split_positions = 8 * plan.split_positions.size();  // I64 entries
  return b;
}

uint32_t CodeStats::max_length() const { return *std::max_element(lengths.begin(), lengths.end()); }

double CodeStats::mean_length_bits() const {
  return safe_ratio(static_cast<double>(coded_bits), static_cast<double>(n_weights));
}

std::vector<CodeSymbol> CodeStats::symbols() const {
  std::vector<CodeSymbol> out;
  for (uint32_t e = 0; e < 256; ++e) {
    if (counts[e] != 0 || lengths[e] != 0) out.push_back({e, counts[e], lengths[e]});
  }
  return out;
}

CodeStats make_code_stats(const Histogram& counts, const std::array<uint8_t, 256>& lengths,
                          uint32_t n_luts) {
  CodeStats s;
  s.counts = counts;
  s.lengths = lengths;
  s.n_luts = n_luts;
  for (uint32_t e = 0; e < 256; ++e) {
    s.n_weights += counts[e];
    s.coded_bits += counts[e] * lengths[e];
  }
  for (const uint64_t c : counts) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / static_cast<double>(s.n_weights);
    s.entropy_bits -= p * std::log2(p);
  }
  return s;
}

ZstdResult& ZstdResult::operator+=(const ZstdResult& other) {
  input_bytes += other.input_bytes;
  output_bytes += other.output_bytes;
  sampled = sampled || other.sampled;
  return *this;
}

double GroupReport::ratio() const {
  if (!coded) return 1.0;
  return safe_ratio(static_cast<double>(bytes.total()), static_cast<double>(bf16_bytes()));
}

double GroupReport::entropy_ratio() const { return (code.entropy_bits + 8.0) / 16.0; }

double GroupReport::bound_ratio() const {
  // spec 3.2: one sign_mantissa byte per weight; the exponent stream cannot average less
  // than the entropy (Shannon); tables, gaps and positions are paid on top.
  const double n = static_cast<double>(n_elements);
  const double bytes_at_entropy = n * (code.entropy_bits + 8.0) / 8.0;
  return safe_ratio(bytes_at_entropy + static_cast<double>(bytes.overhead()), 2.0 * n);
}

const char* checkpoint_kind_name(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kBf16:
      return "bf16";
    case CheckpointKind::kDf11:
      return "df11";
    case CheckpointKind::kDf11NoMetadata:
      return "df11-no-metadata";
  }
  return "unknown";
}

double InspectTotals::coded_ratio() const {
  return safe_ratio(static_cast<double>(coded_stored_bytes), static_cast<double>(coded_bf16_bytes));
}

double InspectTotals::bound_ratio() const {
  return safe_ratio(bound_bytes, static_cast<double>(coded_bf16_bytes));
}

double InspectTotals::model_ratio() const {
  return safe_ratio(static_cast<double>(model_stored_bytes()),
                    static_cast<double>(model_original_bytes()));
}

InspectTotals compute_totals(const InspectReport& report) {
  InspectTotals t;
  double entropy_weighted = 0;
  for (const GroupReport& g : report.groups) {
    if (!g.coded) continue;
    if (!g.alias_of.empty()) {
      t.tied_copy_bytes += g.bytes.total();
      continue;
    }
    ++t.n_groups_coded;
    t.counts_known = t.counts_known && g.counts_known;
    t.coded_weights += g.n_elements;
    t.coded_bf16_bytes += g.bf16_bytes();
    t.coded_stored_bytes += g.bytes.total();
    t.parts.encoded_exponent += g.bytes.encoded_exponent;
    t.parts.sign_mantissa += g.bytes.sign_mantissa;
    t.parts.luts += g.bytes.luts;
    t.parts.gaps += g.bytes.gaps;
    t.parts.output_positions += g.bytes.output_positions;
    t.parts.split_positions += g.bytes.split_positions;
    t.bound_bytes += g.bound_ratio() * static_cast<double>(g.bf16_bytes());
    entropy_weighted += g.code.entropy_bits * static_cast<double>(g.n_elements);
    if (g.zstd) {
      if (!t.zstd) t.zstd = ZstdBaseline{};
      *t.zstd += *g.zstd;
    }
  }
  t.entropy_bits = safe_ratio(entropy_weighted, static_cast<double>(t.coded_weights));
  if (t.coded_weights == 0) t.entropy_bits = 0;
  for (const RawTensorReport& r : report.raw) t.raw_bytes += r.bytes;
  return t;
}

}  // namespace df11::app
