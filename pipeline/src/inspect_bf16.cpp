#include "inspect_bf16.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "compress_plan.h"
#include "df11/block_limits.h"
#include "df11/inspect_zstd.h"
#include "df11/member_spans.h"
#include "df11/reporter.h"
#include "folder_source.h"
#include "parallel_tasks.h"

namespace df11::app {
namespace {

// The compressor's own limit check (block_limits.h) is exact only where it can matter: with
// a shortest code of L >= 2 bits no block can hold more than ceil(32768 / L) <= 16384 codes.
bool block_count_is_exact(const GroupPlan& plan) {
  return block_starts_bound(plan) > kMaxWeightsPerBlockCompat;
}

void fill_from_plan(const MemberSpans& spans, const GroupPlan& plan, GroupReport& g) {
  g.bytes = part_bytes_of_plan(plan);
  g.code = make_code_stats(plan.histogram, plan.code.length,
                           static_cast<uint32_t>(plan.luts.size() / kLutRowSize));
  g.max_block_weights = max_block_weights(spans, plan);
  g.max_block_weights_exact = block_count_is_exact(plan);
}

// A group df11 compress would code: its exact sizes. A group it would store unchanged: why,
// with the statistics that explain it.
Status predict_group(const MemberSpans& spans, GroupReport& g) {
  auto plan = plan_group(spans.spans());
  if (!plan) {
    if (plan.status().code() != ErrorCode::kUncodable) return plan.status();
    g.coded = false;
    Histogram hist{};
    for (const auto& member : spans.spans()) {
      const Histogram h = exponent_histogram(member);
      for (int e = 0; e < 256; ++e) hist[e] += h[e];
    }
    g.code = make_code_stats(hist, {}, 0);
    uint64_t bad = 0;
    for (uint32_t e = kMaxCodableExponent + 1; e < 256; ++e) bad += hist[e];
    g.raw_reason = std::to_string(bad) +
                   " weights are Inf, NaN or |x| >= 2^113 (exponents >= 240 cannot be coded)";
    return Status::ok();
  }
  fill_from_plan(spans, *plan, g);
  if (g.max_block_weights > kMaxWeightsPerBlockCompat) {
    g.coded = false;
    g.raw_reason = std::to_string(g.max_block_weights) +
                   " weights would start in one block, above the loader's limit of " +
                   std::to_string(kMaxWeightsPerBlockCompat) + " (too little entropy)";
  }
  return Status::ok();
}

}  // namespace

void describe_files(const ModelFolder& folder, InspectReport& report) {
  for (size_t s = 0; s < folder.shards.size(); ++s) {
    report.files.push_back(FileReport{folder.shard_names[s], folder.shards[s].mapped().size(),
                                      folder.shards[s].header().tensors.size()});
  }
}

Status predict_bf16_checkpoint(const ModelFolder& folder, bool zstd, InspectReport& report,
                               const CancelToken& cancel) {
  describe_files(folder, report);
  // The compressor's pass 1 decides grouping and raw fallbacks; its warnings become notes.
  struct NoteCollector final : Reporter {
    explicit NoteCollector(std::vector<std::string>& n) : notes(n) {}
    void warning(const std::string& line) override {
      std::lock_guard<std::mutex> lock(mutex);
      notes.push_back(line);
    }
    int verbosity() const override { return 0; }
    std::vector<std::string>& notes;
    std::mutex mutex;
  } collector(report.notes);
  const FolderSource source(folder);
  DF11_ASSIGN_OR_RETURN(CompressPlan plan,
                        plan_compression(source, GroupBy::kBlock, collector, cancel));

  // order index -> group index, for tensors that join a group.
  std::unordered_map<size_t, size_t> group_of;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    const PlannedGroup& pg = plan.groups[gi];
    GroupReport g;
    g.name = pg.spec.name;
    g.file = folder.shard_names[pg.shard];
    for (size_t m : pg.spec.members) {
      const TensorInfo& t = folder.tensor(plan.order[m]);
      if (!pg.spec.alias_name.empty()) {
        g.alias_of = t.name;  // a tied copy: the tensor stays in its own group's rows
        g.members.push_back(MemberReport{pg.spec.alias_name, t.shape, t.n_elements});
        g.n_elements += t.n_elements;
        continue;
      }
      g.members.push_back(MemberReport{t.name, t.shape, t.n_elements});
      g.n_elements += t.n_elements;
      group_of[m] = gi;
    }
    DF11_RETURN_IF_ERROR(cancel.check());
    DF11_ASSIGN_OR_RETURN(MemberSpans spans, group_member_spans(source, plan, pg.spec));
    if (pg.coded) {
      fill_from_plan(spans, pg.plan, g);
    } else {
      DF11_RETURN_IF_ERROR(
          predict_group(spans, g).with_context(group_context(source, plan, pg.spec)));
    }
    report.groups.push_back(std::move(g));
  }

  // Every group member alone, as `df11 compress --group-by tensor` would code it.
  std::vector<size_t> member_rows;  // indices into report.tensors
  std::vector<size_t> row_group;    // the group of each member row
  for (size_t i = 0; i < plan.order.size(); ++i) {
    const TensorLocation& at = plan.order[i];
    const TensorInfo& t = folder.tensor(at);
    const auto it = group_of.find(i);
    const bool coded = it != group_of.end() && report.groups[it->second].coded;
    if (!coded) {
      report.raw.push_back(
          RawTensorReport{t.name, folder.shard_names[at.shard], t.dtype, t.byte_size()});
    }
    if (it == group_of.end()) continue;
    TensorReport r;
    r.name = t.name;
    r.file = folder.shard_names[at.shard];
    r.dtype = t.dtype;
    r.shape = t.shape;
    r.n_elements = t.n_elements;
    r.bytes = t.byte_size();
    if (coded) r.group = report.groups[it->second].name;
    DF11_RETURN_IF_ERROR(cancel.check());
    DF11_ASSIGN_OR_RETURN(MemberSpans spans,
                          MemberSpans::make({folder.shards[at.shard].tensor_bytes(t)}));
    GroupReport alone;
    alone.name = t.name;
    alone.file = r.file;
    alone.members.push_back(MemberReport{t.name, t.shape, t.n_elements});
    alone.n_elements = t.n_elements;
    DF11_RETURN_IF_ERROR(
        predict_group(spans, alone).with_context(r.file + ": tensor '" + t.name + "'"));
    r.alone = std::move(alone);
    folder.shards[at.shard].release(t);
    member_rows.push_back(report.tensors.size());
    row_group.push_back(it->second);
    report.tensors.push_back(std::move(r));
  }

  if (!zstd) return Status::ok();
  report.zstd = true;
  // Tensors in parallel, each compressed on one thread (zstd's own threads stay off so that
  // the result does not depend on the thread count).
  std::mutex error_mutex;
  Status first_error;
  run_tasks(member_rows.size(), [&](size_t k) {
    TensorReport& r = report.tensors[member_rows[k]];
    const TensorLocation& at = folder.tensors.at(r.name);
    const TensorInfo& t = folder.tensor(at);
    const Status interrupted = cancel.check();
    Result<ZstdBaseline> baseline = interrupted.is_ok()
                                        ? zstd_baseline(folder.shards[at.shard].tensor_bytes(t))
                                        : Result<ZstdBaseline>(interrupted);
    folder.shards[at.shard].release(t);
    std::lock_guard<std::mutex> lock(error_mutex);
    if (baseline) {
      r.zstd = *baseline;
    } else if (first_error.is_ok()) {
      first_error = baseline.status().with_context(r.file + ": tensor '" + r.name + "'");
    }
  });
  DF11_RETURN_IF_ERROR(first_error);
  for (GroupReport& g : report.groups) g.zstd = ZstdBaseline{};
  for (size_t k = 0; k < member_rows.size(); ++k) {
    *report.groups[row_group[k]].zstd += *report.tensors[member_rows[k]].zstd;
  }
  return Status::ok();
}

}  // namespace df11::app
