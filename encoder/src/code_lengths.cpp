// Optimal length-limited code lengths: package-merge, and an exact DP that also honours the
// lookup-table limit (spec 2.4; encoder/NOTES.md explains both and argues optimality).
#include "df11/code_lengths.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

namespace df11 {
namespace {

Status check_inputs(std::span<const uint64_t> weights, uint32_t max_length) {
  const size_t n = weights.size();
  if (n < 2 || n > kMaxCodeLengthsAlphabet) {
    return Status(ErrorCode::kInvalidArgument,
                  "code lengths: alphabet of " + std::to_string(n) + " symbols, need 2.." +
                      std::to_string(kMaxCodeLengthsAlphabet));
  }
  if (max_length < 1 || max_length > kMaxCodeLength) {
    return Status(ErrorCode::kInvalidArgument,
                  "code lengths: max_length " + std::to_string(max_length) + ", need 1.." +
                      std::to_string(kMaxCodeLength));
  }
  if (max_length < 32 && n > (uint64_t{1} << max_length)) {
    return Status(ErrorCode::kInvalidArgument,
                  "code lengths: " + std::to_string(n) + " symbols cannot have codes of at most " +
                      std::to_string(max_length) + " bits");
  }
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (weights[i] == 0) {
      return Status(ErrorCode::kInvalidArgument,
                    "code lengths: weight " + std::to_string(i) + " is 0");
    }
    total += weights[i];
    if (weights[i] > kMaxCodeLengthsTotalWeight || total > kMaxCodeLengthsTotalWeight) {
      return Status(ErrorCode::kInvalidArgument, "code lengths: sum of weights exceeds 2^58");
    }
  }
  return Status::ok();
}

// Indices sorted by weight (ascending or descending), ties by index: the only source of
// order, so results are deterministic.
std::vector<uint32_t> sorted_indices(std::span<const uint64_t> weights, bool descending) {
  std::vector<uint32_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return descending ? weights[x] > weights[y] : weights[x] < weights[y];
  });
  return order;
}

}  // namespace

uint64_t count_subtables(std::span<const uint8_t> lengths, const LutShape& shape) {
  uint32_t longest = 0;
  for (uint8_t l : lengths) longest = std::max<uint32_t>(longest, l);
  if (longest > kMaxCodeLength) return std::numeric_limits<uint64_t>::max();
  if (shape.index_bits == 0) return longest > 0 ? std::numeric_limits<uint64_t>::max() : 0;
  uint64_t subtables = 0;
  for (uint32_t prefix = shape.index_bits; prefix < longest; prefix += shape.index_bits) {
    // Kraft mass of the codes longer than `prefix`, in units of 2^-32 (fits: <= 255 * 2^31).
    uint64_t mass = 0;
    for (uint8_t l : lengths) {
      if (l > prefix) mass += uint64_t{1} << (kMaxCodeLength - l);
    }
    const uint64_t cell = uint64_t{1} << (kMaxCodeLength - prefix);
    subtables += (mass + cell - 1) / cell;
  }
  return subtables;
}

Result<std::vector<uint8_t>> package_merge_lengths(std::span<const uint64_t> weights,
                                                   uint32_t max_length) {
  DF11_RETURN_IF_ERROR(check_inputs(weights, max_length));
  const size_t n = weights.size();
  const std::vector<uint32_t> order = sorted_indices(weights, /*descending=*/false);
  std::vector<uint64_t> leaves(n);
  for (size_t i = 0; i < n; ++i) leaves[i] = weights[order[i]];

  // Coin collector's formulation: level j (1..max_length) offers every leaf once with width
  // 2^-j, plus "packages" pairing consecutive items of level j + 1. The 2n - 2 lightest
  // items of level 1 are the optimal selection; a leaf's code length is the number of levels
  // at which it is selected. Only the first 2n - 2 items of a list can ever be selected.
  const size_t keep = 2 * n - 2;
  std::vector<std::vector<uint8_t>> is_leaf(max_length + 1);
  std::vector<uint64_t> deeper;  // weights of the list one level down
  std::vector<uint64_t> merged;
  for (uint32_t level = max_length; level >= 1; --level) {
    merged.clear();
    std::vector<uint8_t>& flags = is_leaf[level];
    flags.clear();
    size_t li = 0, pi = 0;
    const size_t packages = deeper.size() / 2;
    while (merged.size() < keep && (li < n || pi < packages)) {
      const bool take_leaf =
          pi == packages || (li < n && leaves[li] <= deeper[2 * pi] + deeper[2 * pi + 1]);
      if (take_leaf) {
        merged.push_back(leaves[li++]);
        flags.push_back(1);
      } else {
        merged.push_back(deeper[2 * pi] + deeper[2 * pi + 1]);
        ++pi;
        flags.push_back(0);
      }
    }
    deeper.swap(merged);
  }

  std::vector<uint8_t> by_rank(n, 0);  // length of the i-th lightest symbol
  size_t take = keep;
  for (uint32_t level = 1; level <= max_length && take > 0; ++level) {
    const std::vector<uint8_t>& flags = is_leaf[level];
    if (take > flags.size()) {
      return Status(ErrorCode::kInternal, "package-merge: list too short at level " +
                                              std::to_string(level));
    }
    size_t leaves_taken = 0;
    for (size_t i = 0; i < take; ++i) leaves_taken += flags[i];
    // Leaves appear in each list in ascending weight order, so those taken are the lightest.
    for (size_t i = 0; i < leaves_taken; ++i) ++by_rank[i];
    take = 2 * (take - leaves_taken);
  }
  std::vector<uint8_t> lengths(n);
  for (size_t i = 0; i < n; ++i) lengths[order[i]] = by_rank[i];
  return lengths;
}

Result<std::vector<uint8_t>> lut_limited_lengths(std::span<const uint64_t> weights,
                                                 uint32_t max_length, const LutShape& shape) {
  DF11_RETURN_IF_ERROR(check_inputs(weights, max_length));
  if (shape.index_bits < 1 || shape.max_subtables > 255) {
    return Status(ErrorCode::kInvalidArgument,
                  "code lengths: table shape needs index_bits >= 1 and max_subtables <= 255");
  }
  const uint32_t n = static_cast<uint32_t>(weights.size());
  const uint32_t budget = shape.max_subtables;
  const uint32_t stride = budget + 1;

  // Symbols heaviest first: an optimal code never gives a heavier symbol a longer code, so
  // a code is described by how many of the next symbols become leaves at each depth.
  const std::vector<uint32_t> order = sorted_indices(weights, /*descending=*/true);
  std::vector<uint64_t> rest(n + 1, 0);  // rest[m] = weight of symbols m..n-1
  for (uint32_t m = n; m-- > 0;) rest[m] = rest[m + 1] + weights[order[m]];

  // State at depth d: m symbols placed, a free nodes at depth d (a <= n - m: more are never
  // useful), b subtables left. Moving one level down costs rest[m] (every unplaced symbol
  // gets one more bit). Expanding nodes at depth k * index_bits creates subtables, one per
  // expanded node.
  std::vector<size_t> row(n + 2, 0);
  for (uint32_t m = 0; m <= n; ++m) row[m + 1] = row[m] + size_t{n - m + 1} * stride;
  const size_t states = row[n + 1];
  auto at = [&](uint32_t m, uint32_t a, uint32_t b) { return row[m] + size_t{a} * stride + b; };

  constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();
  constexpr uint8_t kLeaf = 255;  // else: (free nodes one level up) - 1
  // how[d][state]: how the state was reached at depth d, for reconstruction.
  std::vector<uint8_t> how(size_t{max_length + 1} * states, 0);
  std::vector<uint64_t> cur(states, kInf), next(states, kInf);
  cur[at(0, 1, budget)] = 0;

  uint64_t best = kInf;
  uint32_t best_depth = 0, best_budget = 0;
  for (uint32_t d = 0; d <= max_length; ++d) {
    uint8_t* how_d = how.data() + size_t{d} * states;
    if (d >= 1) {  // place the next symbol as a leaf here (any number of times)
      for (uint32_t m = 0; m < n; ++m) {
        for (uint32_t a = 1; a <= n - m; ++a) {
          for (uint32_t b = 0; b <= budget; ++b) {
            const uint64_t c = cur[at(m, a, b)];
            const size_t t = at(m + 1, a - 1, b);
            if (c < cur[t]) {
              cur[t] = c;
              how_d[t] = kLeaf;
            }
          }
        }
      }
    }
    for (uint32_t b = 0; b <= budget; ++b) {  // every symbol placed (row n has only a == 0)
      if (cur[at(n, 0, b)] < best) {
        best = cur[at(n, 0, b)];
        best_depth = d;
        best_budget = b;
      }
    }
    if (d == max_length) break;
    std::fill(next.begin(), next.end(), kInf);
    uint8_t* how_next = how.data() + size_t{d + 1} * states;
    const bool table_depth = d > 0 && d % shape.index_bits == 0;
    for (uint32_t m = 0; m < n; ++m) {
      const uint32_t cap = n - m;
      for (uint32_t a = 1; a <= cap; ++a) {
        for (uint32_t b = 0; b <= budget; ++b) {
          const uint64_t c = cur[at(m, a, b)];
          if (c == kInf) continue;
          const uint64_t nc = c + rest[m];
          if (!table_depth) {
            const size_t t = at(m, std::min(2 * a, cap), b);
            if (nc < next[t]) {
              next[t] = nc;
              how_next[t] = static_cast<uint8_t>(a - 1);
            }
            continue;
          }
          // Expanding e nodes here costs e subtables; more than ceil(cap / 2) is useless.
          const uint32_t most = std::min({a, b, (cap + 1) / 2});
          for (uint32_t e = 1; e <= most; ++e) {
            const size_t t = at(m, std::min(2 * e, cap), b - e);
            if (nc < next[t]) {
              next[t] = nc;
              how_next[t] = static_cast<uint8_t>(a - 1);
            }
          }
        }
      }
    }
    cur.swap(next);
  }
  if (best == kInf) {
    return Status(ErrorCode::kUncodable,
                  "code lengths: no code for " + std::to_string(n) + " symbols has codes of at " +
                      "most " + std::to_string(max_length) + " bits and at most " +
                      std::to_string(budget) + " subtables");
  }

  std::vector<uint8_t> lengths(n, 0);
  uint32_t d = best_depth, m = n, a = 0, b = best_budget;
  while (d > 0) {
    const uint8_t h = how[size_t{d} * states + at(m, a, b)];
    if (h == kLeaf) {
      lengths[order[m - 1]] = static_cast<uint8_t>(d);
      --m;
      ++a;
      continue;
    }
    --d;
    // At a table depth e = ceil(a / 2) nodes were expanded (a = min(2e, n - m) with
    // e <= ceil((n - m) / 2)), and they used e subtables.
    if (d > 0 && d % shape.index_bits == 0) b += (a + 1) / 2;
    a = uint32_t{h} + 1;
  }
  if (m != 0 || a != 1 || b != budget) {
    return Status(ErrorCode::kInternal, "code lengths: DP reconstruction failed");
  }
  return lengths;
}

}  // namespace df11
