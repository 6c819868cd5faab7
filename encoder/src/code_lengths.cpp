// Optimal length-limited code lengths: package-merge, and an exact DP that also honours the
// lookup-table limit (spec 2.4; encoder/NOTES.md explains both and argues optimality).
#include "df11/code_lengths.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

namespace df11 {
namespace {

Status check_inputs(std::span<const uint64_t> weights, uint32_t max_length) {
  const size_t n = weights.size();
  if (n < 2 || n > kMaxCodeLengthsAlphabet) {
    return Status(ErrorCode::kInvalidArgument, "code lengths: alphabet of " + std::to_string(n) +
                                                   " symbols, need 2.." +
                                                   std::to_string(kMaxCodeLengthsAlphabet));
  }
  if (max_length < 1 || max_length > kMaxCodeLength) {
    return Status(ErrorCode::kInvalidArgument, "code lengths: max_length " +
                                                   std::to_string(max_length) + ", need 1.." +
                                                   std::to_string(kMaxCodeLength));
  }
  if (max_length < 32 && n > (uint64_t{1} << max_length)) {
    return Status(ErrorCode::kInvalidArgument, "code lengths: " + std::to_string(n) +
                                                   " symbols cannot have codes of at most " +
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
      return Status(ErrorCode::kInternal,
                    "package-merge: list too short at level " + std::to_string(level));
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

namespace {

constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();

uint64_t code_cost(std::span<const uint64_t> weights, std::span<const uint8_t> lengths) {
  uint64_t cost = 0;
  for (size_t i = 0; i < weights.size(); ++i) cost += weights[i] * lengths[i];
  return cost;
}

// Cost of some code meeting both limits, or kInf if none is found: the package-merge code for
// the largest length limit found (by bisection) whose canonical code fits the table shape;
// limits of at most index_bits bits always fit. Any valid code's cost bounds the DP's optimum
// from above; a closer bound only makes the search faster.
uint64_t feasible_cost(std::span<const uint64_t> weights, const LutShape& shape,
                       std::span<const uint8_t> unlimited) {
  const auto cost_if_valid = [&](uint32_t limit) -> uint64_t {
    const Result<std::vector<uint8_t>> lengths = package_merge_lengths(weights, limit);
    if (!lengths.is_ok() || count_subtables(*lengths, shape) > shape.max_subtables) return kInf;
    return code_cost(weights, *lengths);
  };
  // Only called once package-merge's code for the length limit (`unlimited`) failed the shape.
  // Any limit at or above its longest code gives the same code, so the search stays below.
  uint32_t lo = 1;  // the shortest limit that can code every symbol
  while (lo < 32 && weights.size() > (uint64_t{1} << lo)) ++lo;
  uint64_t lo_cost = cost_if_valid(lo);
  if (lo_cost == kInf) return kInf;
  // Invariant: limit lo gives a valid code costing lo_cost, limit hi does not.
  uint32_t hi = *std::max_element(unlimited.begin(), unlimited.end());
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    const uint64_t c = cost_if_valid(mid);
    if (c != kInf) {
      lo = mid;
      lo_cost = c;
    } else {
      hi = mid;
    }
  }
  return lo_cost;
}

// forest(m, a): least cost (sum of weight * depth) of a forest of a binary trees whose leaves
// are the symbols m..n-1 (heaviest first), with no limit on depth. Huffman's merging stopped
// when a trees remain is optimal for forests (the two lightest symbols are siblings in some
// optimal forest, as in Huffman's proof). Symbols are sorted, so each m takes one pass with
// two queues: O(n^2) in all.
class ForestCosts {
 public:
  explicit ForestCosts(std::span<const uint64_t> sorted_weights)
      : n_(static_cast<uint32_t>(sorted_weights.size())), start_(n_ + 1, 0) {
    for (uint32_t m = 0; m < n_; ++m) start_[m + 1] = start_[m] + (n_ - m + 1);
    cost_.resize(start_[n_] + 1, 0);
    std::vector<uint64_t> merged;
    merged.reserve(n_);
    for (uint32_t m = 0; m < n_; ++m) {
      const uint32_t k = n_ - m;
      uint64_t* row = cost_.data() + start_[m];  // row[a], a = 1..k
      row[0] = kInf;
      row[k] = 0;
      merged.clear();
      uint32_t leaf = n_;  // next lightest leaf is sorted_weights[leaf - 1]
      size_t head = 0;
      const auto pop = [&]() {
        if (head < merged.size() && (leaf == m || merged[head] < sorted_weights[leaf - 1])) {
          return merged[head++];
        }
        return sorted_weights[--leaf];
      };
      uint64_t cost = 0;
      for (uint32_t roots = k; roots > 1; --roots) {
        const uint64_t sum = pop() + pop();
        merged.push_back(sum);
        cost += sum;
        row[roots - 1] = cost;
      }
    }
  }
  uint64_t operator()(uint32_t m, uint32_t a) const { return cost_[start_[m] + a]; }

 private:
  uint32_t n_;
  std::vector<size_t> start_;
  std::vector<uint64_t> cost_;
};

// One depth's DP states, stored like the full state space (state (m, a, b) at row[m] +
// a * stride + b) but visiting only the states reached, so that a depth costs time in
// proportion to those (a few thousand when the search is pruned well), not to all states.
// Bitsets say which states are valid: per row m the free-node counts a with any valid state,
// per (m, a) the budgets b. Visiting follows set bits upwards, which is the DP's loop order
// (m, then a, then b ascending). `cost` and `how` are uninitialised where no bit is set.
class StateLayer {
 public:
  StateLayer(uint32_t n, uint32_t stride, size_t states)
      : stride_(stride),
        words_((stride + 63) / 64),
        cost_(std::make_unique_for_overwrite<uint64_t[]>(states)),
        how_(std::make_unique_for_overwrite<uint8_t[]>(states)),
        cell_row_(n + 2, 0),
        state_row_(n + 2, 0),
        rows_(size_t{n + 1} * kRowWords, 0) {
    for (uint32_t m = 0; m <= n; ++m) {
      cell_row_[m + 1] = cell_row_[m] + (n - m + 1);
      state_row_[m + 1] = state_row_[m] + size_t{n - m + 1} * stride;
    }
    cells_.assign(cell_row_[n + 1] * words_, 0);
  }
  size_t index(uint32_t m, uint32_t a, uint32_t b) const {
    return state_row_[m] + size_t{a} * stride_ + b;
  }
  uint64_t* cost() { return cost_.get(); }
  uint8_t* how() { return how_.get(); }
  bool valid(uint32_t m, uint32_t a, uint32_t b) const {
    return (cells_[cell(m, a) + b / 64] >> (b % 64)) & 1;
  }
  // Makes state (m, a, b) valid, with cost kInf if it was not; returns its index.
  size_t reach(uint32_t m, uint32_t a, uint32_t b) {
    const size_t i = index(m, a, b);
    uint64_t& word = cells_[cell(m, a) + b / 64];
    const uint64_t bit = uint64_t{1} << (b % 64);
    if ((word & bit) == 0) {
      word |= bit;
      rows_[size_t{m} * kRowWords + a / 64] |= uint64_t{1} << (a % 64);
      used_[m / 64] |= uint64_t{1} << (m % 64);
      cost_[i] = kInf;
    }
    return i;
  }
  // The first row >= m with a valid state, or a value > n if there is none.
  uint32_t next_row(uint32_t m) const {
    for (uint32_t w = m / 64; w < kRowWords; ++w) {
      const uint64_t bits = used_[w] & (w == m / 64 ? ~uint64_t{0} << (m % 64) : ~uint64_t{0});
      if (bits != 0) return 64 * w + static_cast<uint32_t>(std::countr_zero(bits));
    }
    return 64 * kRowWords;
  }
  // Calls f(a, b, index) for every valid state of row m, in increasing index.
  template <typename F>
  void visit_row(uint32_t m, const F& f) const {
    for (uint32_t aw = 0; aw < kRowWords; ++aw) {
      for (uint64_t as = rows_[size_t{m} * kRowWords + aw]; as != 0; as &= as - 1) {
        const uint32_t a = 64 * aw + static_cast<uint32_t>(std::countr_zero(as));
        for (uint32_t bw = 0; bw < words_; ++bw) {
          for (uint64_t bs = cells_[cell(m, a) + bw]; bs != 0; bs &= bs - 1) {
            const uint32_t b = 64 * bw + static_cast<uint32_t>(std::countr_zero(bs));
            f(a, b, index(m, a, b));
          }
        }
      }
    }
  }
  void clear() {
    for (uint32_t m = next_row(0); m < 64 * kRowWords; m = next_row(m + 1)) {
      for (uint32_t aw = 0; aw < kRowWords; ++aw) {
        uint64_t& as = rows_[size_t{m} * kRowWords + aw];
        for (; as != 0; as &= as - 1) {
          const uint32_t a = 64 * aw + static_cast<uint32_t>(std::countr_zero(as));
          std::fill_n(cells_.begin() + cell(m, a), words_, 0);
        }
      }
    }
    std::fill(std::begin(used_), std::end(used_), 0);
  }

 private:
  static constexpr uint32_t kRowWords = 4;  // bitsets over m <= n or a <= n: n <= 255
  size_t cell(uint32_t m, uint32_t a) const { return (cell_row_[m] + a) * words_; }

  uint32_t stride_, words_;
  std::unique_ptr<uint64_t[]> cost_;
  std::unique_ptr<uint8_t[]> how_;
  std::vector<size_t> cell_row_;   // first (m, a) cell of row m
  std::vector<size_t> state_row_;  // index of state (m, 0, 0)
  uint64_t used_[kRowWords] = {};  // bit m set if row m has a valid state
  std::vector<uint64_t> rows_;     // per row m: bit a set if some (m, a, b) is valid
  std::vector<uint64_t> cells_;    // per (m, a): bit b set if (m, a, b) is valid
};

// The table-limited DP (encoder/NOTES.md). State at depth d: m symbols placed, a free nodes
// at depth d (a <= n - m: more are never useful), b subtables left. Moving one level down
// costs rest[m] (every unplaced symbol gets one more bit). Expanding nodes at depth
// k * index_bits creates subtables, one per expanded node.
//
// search(ceiling) skips every state whose cost so far plus a lower bound on the cost still to
// come exceeds `ceiling`. If the optimum is <= ceiling, every state on an optimal path
// survives with its exact cost and the same first-found predecessor as without pruning
// (pruned states cost more, and costs are only ever overestimated), so the result is bit for
// bit the unpruned DP's; otherwise nothing reaches the end.
class LutDp {
 public:
  LutDp(std::span<const uint64_t> weights, uint32_t max_length, const LutShape& shape)
      : n_(static_cast<uint32_t>(weights.size())),
        budget_(shape.max_subtables),
        stride_(budget_ + 1),
        max_length_(max_length),
        index_bits_(shape.index_bits),
        // Heaviest first: an optimal code never gives a heavier symbol a longer code, so a
        // code is described by how many of the next symbols become leaves at each depth.
        order_(sorted_indices(weights, /*descending=*/true)),
        by_weight_(permuted(weights, order_)),
        rest_(n_ + 1, 0),
        row_(n_ + 2, 0),
        forest_(by_weight_),
        records_(max_length + 1) {
    for (uint32_t m = n_; m-- > 0;) rest_[m] = rest_[m + 1] + by_weight_[m];
    for (uint32_t m = 0; m <= n_; ++m) row_[m + 1] = row_[m] + size_t{n_ - m + 1} * stride_;
    states_ = row_[n_ + 1];
    layers_[0] = std::make_unique<StateLayer>(n_, stride_, states_);
    layers_[1] = std::make_unique<StateLayer>(n_, stride_, states_);
  }

  // Lengths (in the caller's symbol order) of an optimal code if its cost is <= ceiling.
  std::optional<std::vector<uint8_t>> search(uint64_t ceiling);
  // States the last search reached, and all states of all depths.
  uint64_t visited() const { return visited_; }
  // After a failed search: the least bound among the states it pruned. Every path it did not
  // follow costs at least this much, so the optimum does too, and a search with a lower limit
  // would repeat this one.
  uint64_t beyond() const { return beyond_; }
  uint64_t all_states() const { return uint64_t{states_} * (max_length_ + 1); }

 private:
  static std::vector<uint64_t> permuted(std::span<const uint64_t> weights,
                                        std::span<const uint32_t> order) {
    std::vector<uint64_t> w(order.size());
    for (size_t i = 0; i < order.size(); ++i) w[i] = weights[order[i]];
    return w;
  }
  // How a state was reached, for reconstruction: kLeaf, or (free nodes one level up) - 1.
  static constexpr uint8_t kLeaf = 255;
  struct Record {
    size_t state;
    uint8_t how;
  };

  size_t at(uint32_t m, uint32_t a, uint32_t b) const { return row_[m] + size_t{a} * stride_ + b; }
  // Lower bound on the cost still to come for m placed symbols and a free nodes at depth d:
  // the best forest without limits (0 when m = n, kInf when a = 0 < n - m), or kInf when the
  // remaining symbols cannot fit above max_length at all (n <= 255: only in the last 8
  // levels).
  uint64_t lower(uint32_t d, uint32_t m, uint32_t a) const {
    if (d + 8 > max_length_ && n_ - m > (uint64_t{a} << (max_length_ - d))) return kInf;
    return forest_(m, a);
  }
  void place_leaves(uint32_t d, uint64_t ceiling, StateLayer& cur);
  void descend(uint32_t d, uint64_t ceiling, const StateLayer& cur, StateLayer& next);
  void keep_records(uint32_t d, StateLayer& cur);
  std::vector<uint8_t> reconstruct(uint32_t depth, uint32_t subtables_left) const;

  uint32_t n_, budget_, stride_, max_length_, index_bits_;
  std::vector<uint32_t> order_;
  std::vector<uint64_t> by_weight_;  // weights, heaviest first
  std::vector<uint64_t> rest_;       // rest_[m] = weight of symbols m..n-1
  std::vector<size_t> row_;          // row_[m] = index of state (m, 0, 0)
  size_t states_ = 0;
  ForestCosts forest_;
  std::unique_ptr<StateLayer> layers_[2];
  std::vector<std::vector<Record>> records_;  // per depth, the states reached, by index
  uint64_t visited_ = 0;
  uint64_t beyond_ = kInf;
};

// Costs are at most 32 * 2^58 and bounds below 2^63: the sums below cannot overflow.

// At depth d >= 1 the next symbol may become a leaf, any number of times: rows in increasing
// m, so that chains of leaves see the costs just written.
void LutDp::place_leaves(uint32_t d, uint64_t ceiling, StateLayer& cur) {
  uint64_t* cost = cur.cost();
  uint8_t* how = cur.how();
  uint64_t beyond = beyond_;
  // Row m + 1 may gain states while row m is visited, so the next row is looked up afresh.
  for (uint32_t m = cur.next_row(0); m < n_; m = cur.next_row(m + 1)) {
    cur.visit_row(m, [&](uint32_t a, uint32_t b, size_t i) {
      const uint64_t c = cost[i];
      // Every reached state has a finite cost, and a >= 1 outside row n (lower() is kInf for
      // a = 0 < n - m, so such states are never reached).
      const uint64_t h = lower(d, m + 1, a - 1);
      if (h == kInf) return;
      if (c + h > ceiling) {
        beyond = std::min(beyond, c + h);
        return;
      }
      const size_t t = cur.reach(m + 1, a - 1, b);
      if (c < cost[t]) {
        cost[t] = c;
        how[t] = kLeaf;
      }
    });
  }
  beyond_ = beyond;
}

// Depth d -> d + 1. At a table depth the transition expands e nodes into subtables; elsewhere
// all free nodes are expanded (more free nodes never hurt).
void LutDp::descend(uint32_t d, uint64_t ceiling, const StateLayer& cur, StateLayer& next) {
  const uint64_t* cost = const_cast<StateLayer&>(cur).cost();
  uint64_t* next_cost = next.cost();
  uint8_t* next_how = next.how();
  uint64_t beyond = beyond_;
  const bool table_depth = d > 0 && d % index_bits_ == 0;
  for (uint32_t m = cur.next_row(0); m < n_; m = cur.next_row(m + 1)) {
    const uint32_t cap = n_ - m;
    cur.visit_row(m, [&](uint32_t a, uint32_t b, size_t i) {
      ++visited_;
      const uint64_t c = cost[i];
      // As in place_leaves(): c is finite and a >= 1.
      const uint64_t nc = c + rest_[m];
      // Expanding e nodes costs e subtables; more than ceil(cap / 2) is useless.
      const uint32_t first = table_depth ? 1 : a;
      const uint32_t last = table_depth ? std::min({a, b, (cap + 1) / 2}) : a;
      for (uint32_t e = first; e <= last; ++e) {
        const uint32_t free_nodes = std::min(2 * e, cap);
        const uint64_t h = lower(d + 1, m, free_nodes);
        if (h == kInf) continue;
        if (nc + h > ceiling) {
          beyond = std::min(beyond, nc + h);
          continue;
        }
        const size_t t = next.reach(m, free_nodes, table_depth ? b - e : b);
        if (nc < next_cost[t]) {
          next_cost[t] = nc;
          next_how[t] = static_cast<uint8_t>(a - 1);
        }
      }
    });
  }
  beyond_ = beyond;
}

void LutDp::keep_records(uint32_t d, StateLayer& cur) {
  std::vector<Record>& records = records_[d];
  records.clear();
  const uint8_t* how = cur.how();
  for (uint32_t m = cur.next_row(0); m <= n_; m = cur.next_row(m + 1)) {
    cur.visit_row(m, [&](uint32_t, uint32_t, size_t i) { records.push_back({i, how[i]}); });
  }
}

std::optional<std::vector<uint8_t>> LutDp::search(uint64_t ceiling) {
  StateLayer* cur = layers_[0].get();
  StateLayer* next = layers_[1].get();
  visited_ = 0;
  beyond_ = kInf;
  cur->clear();
  cur->cost()[cur->reach(0, 1, budget_)] = 0;

  uint64_t best = kInf;
  uint32_t best_depth = 0, best_budget = 0;
  for (uint32_t d = 0; d <= max_length_; ++d) {
    if (d >= 1) place_leaves(d, ceiling, *cur);
    keep_records(d, *cur);
    for (uint32_t b = 0; b <= budget_; ++b) {  // every symbol placed (row n has only a == 0)
      if (cur->valid(n_, 0, b) && cur->cost()[at(n_, 0, b)] < best) {
        best = cur->cost()[at(n_, 0, b)];
        best_depth = d;
        best_budget = b;
      }
    }
    if (d == max_length_) break;
    next->clear();
    descend(d, ceiling, *cur, *next);
    std::swap(cur, next);
  }
  if (best == kInf) return std::nullopt;
  return reconstruct(best_depth, best_budget);
}

// Walks back from the chosen end state; an empty result means the records are inconsistent
// (cannot happen).
std::vector<uint8_t> LutDp::reconstruct(uint32_t depth, uint32_t subtables_left) const {
  std::vector<uint8_t> lengths(n_, 0);
  uint32_t d = depth, m = n_, a = 0, b = subtables_left;
  while (d > 0) {
    const std::vector<Record>& records = records_[d];
    const size_t state = at(m, a, b);
    const auto r = std::lower_bound(records.begin(), records.end(), state,
                                    [](const Record& x, size_t s) { return x.state < s; });
    if (r == records.end() || r->state != state) return {};
    if (r->how == kLeaf) {
      lengths[order_[m - 1]] = static_cast<uint8_t>(d);
      --m;
      ++a;
      continue;
    }
    --d;
    // At a table depth e = ceil(a / 2) nodes were expanded (a = min(2e, n - m) with
    // e <= ceil((n - m) / 2)), and they used e subtables.
    if (d > 0 && d % index_bits_ == 0) b += (a + 1) / 2;
    a = uint32_t{r->how} + 1;
  }
  if (m != 0 || a != 1 || b != budget_) return {};
  return lengths;
}

}  // namespace

Result<std::vector<uint8_t>> lut_limited_lengths(std::span<const uint64_t> weights,
                                                 uint32_t max_length, const LutShape& shape) {
  DF11_RETURN_IF_ERROR(check_inputs(weights, max_length));
  if (shape.index_bits < 1 || shape.max_subtables > 255) {
    return Status(ErrorCode::kInvalidArgument,
                  "code lengths: table shape needs index_bits >= 1 and max_subtables <= 255");
  }
  // The optimum lies between the best code under the length limit alone (`floor`) and a
  // known valid code (`ceiling`, kInf if none was found). A search whose limit is near the
  // optimum prunes almost every state, so the first search uses `floor` (often enough: many
  // optimal codes exist when weights tie), and each failed search at least doubles the
  // distance to the floor (starting at gap / 1024), never below what the failed search proved
  // (LutDp::beyond()), up to the ceiling. A failed search never reaches more states than the
  // next one, so once one reaches a sizeable part of the state space the ladder jumps to the
  // ceiling.
  DF11_ASSIGN_OR_RETURN(const std::vector<uint8_t> unlimited,
                        package_merge_lengths(weights, max_length));
  const uint64_t floor = code_cost(weights, unlimited);
  try {
    LutDp dp(weights, max_length, shape);
    uint64_t ceiling = kInf, limit = floor;
    for (bool first = true;; first = false) {
      std::optional<std::vector<uint8_t>> lengths = dp.search(limit);
      if (lengths.has_value()) {
        if (lengths->empty()) {
          return Status(ErrorCode::kInternal, "code lengths: DP reconstruction failed");
        }
        return std::move(*lengths);
      }
      // Nothing pruned by cost: the search was exhaustive, so no valid code exists.
      if (dp.beyond() == kInf || limit >= ceiling) break;
      if (first) ceiling = feasible_cost(weights, shape, unlimited);
      const uint64_t gap = ceiling == kInf ? floor : ceiling - floor;
      const uint64_t offset = limit - floor;
      uint64_t next = ceiling;
      if (offset < gap / 2 && dp.visited() <= dp.all_states() / 16) {
        next = floor + std::max(2 * offset, gap / 1024);
      }
      limit = std::min(std::max(next, dp.beyond()), ceiling);
    }
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit,
                  "code lengths: out of memory in the table-limited search");
  }
  return Status(ErrorCode::kUncodable,
                "code lengths: no code for " + std::to_string(weights.size()) +
                    " symbols has codes of at most " + std::to_string(max_length) +
                    " bits and at most " + std::to_string(shape.max_subtables) + " subtables");
}

}  // namespace df11
