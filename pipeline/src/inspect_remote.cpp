#include "df11/inspect_remote.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "compress_plan.h"
#include "df11/block_limits.h"
#include "df11/count_text.h"
#include "df11/dtype_shares.h"
#include "df11/encoder.h"
#include "df11/group.h"
#include "df11/hub/hub.h"
#include "df11/model_folder.h"
#include "df11/safetensors.h"
#include "inspect_df11.h"

namespace df11::app {
namespace {

// The repo as read so far: what every step needs.
struct RemoteRepo {
  hub::HubConfig config;
  hub::RepoRef ref;
  hub::RemoteListing listing;
  hub::TransferControl control;
  hub::RangeStats stats;
  std::map<std::string, uint64_t> sizes;  // every file

  Result<std::vector<std::string>> read(const std::vector<hub::ByteRange>& ranges) {
    if (ranges.empty()) return std::vector<std::string>();
    return hub::read_ranges(config, ref.repo_id, listing, ranges, control, &stats);
  }
  std::string label(const std::string& path) const { return ref.repo_id + "/" + path; }
};

// config.json and the index, whole, when the repo has them (bounded like a local folder's).
Status read_side_texts(RemoteRepo& repo, std::optional<std::string>& config_text,
                       std::optional<std::string>& index_text, std::string& index_name) {
  index_name = kIndexFile;
  for (const char* name : {kIndexFile, kDiffusersIndexFile}) {
    if (repo.sizes.count(name)) {
      index_name = name;
      break;
    }
  }
  std::vector<hub::ByteRange> ranges;
  std::vector<std::optional<std::string>*> targets;
  for (const auto& [name, target] :
       {std::pair<std::string, std::optional<std::string>*>{kConfigFile, &config_text},
        {index_name, &index_text}}) {
    const auto it = repo.sizes.find(name);
    if (it == repo.sizes.end()) continue;
    const uint64_t limit = std::min<uint64_t>(
        name == kConfigFile ? kMaxConfigBytes : kMaxIndexBytes, hub::kMaxRangeBytes);
    if (it->second > limit) {
      return Status(ErrorCode::kResourceLimit,
                    repo.label(name) + ": " + std::to_string(it->second) +
                        " bytes, more than the " + std::to_string(limit) + " read for it");
    }
    if (it->second == 0) {
      *target = std::string();
      continue;
    }
    ranges.push_back({name, 0, it->second});
    targets.push_back(target);
  }
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> texts, repo.read(ranges));
  for (size_t i = 0; i < texts.size(); ++i) *targets[i] = std::move(texts[i]);
  return Status::ok();
}

// Every shard's header: the 8-byte length first, checked (spec 6.3 H2, H3) before the
// header itself is asked for, so a hostile length never becomes a large request.
Result<std::vector<SafetensorsHeader>> read_headers(RemoteRepo& repo,
                                                    const std::vector<std::string>& shards) {
  std::vector<hub::ByteRange> lengths;
  for (const std::string& name : shards) {
    const uint64_t size = repo.sizes.at(name);
    if (size < kHeaderLengthBytes)
      return parse_safetensors_header({}, size, repo.label(name)).status();
    lengths.push_back({name, 0, kHeaderLengthBytes});
  }
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> prefixes, repo.read(lengths));
  std::vector<hub::ByteRange> texts;
  std::vector<size_t> asked;  // shard of each header read
  for (size_t s = 0; s < shards.size(); ++s) {
    const uint64_t size = repo.sizes.at(shards[s]);
    const uint64_t n = load_le64(reinterpret_cast<const uint8_t*>(prefixes[s].data()));
    if (n == 0 || n > kMaxHeaderBytes || n > size - kHeaderLengthBytes) {
      // The format's own message for this length (too large, past the file, empty).
      const auto bytes = reinterpret_cast<const uint8_t*>(prefixes[s].data());
      return parse_safetensors_header({bytes, prefixes[s].size()}, size, repo.label(shards[s]))
          .status();
    }
    texts.push_back({shards[s], kHeaderLengthBytes, n});
    asked.push_back(s);
  }
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> headers_text, repo.read(texts));
  std::vector<SafetensorsHeader> headers;
  std::map<std::string, std::string> owner;  // tensor name -> shard
  for (size_t i = 0; i < asked.size(); ++i) {
    const size_t s = asked[i];
    std::string prefix = prefixes[s] + headers_text[i];
    DF11_ASSIGN_OR_RETURN(
        SafetensorsHeader h,
        parse_safetensors_header({reinterpret_cast<const uint8_t*>(prefix.data()), prefix.size()},
                                 repo.sizes.at(shards[s]), repo.label(shards[s])));
    for (const TensorInfo& t : h.tensors) {
      const auto [it, inserted] = owner.emplace(t.name, shards[s]);
      if (!inserted) {
        return Status(ErrorCode::kDuplicateName,
                      repo.label(shards[s]) + ": tensor '" + t.name + "' also appears in " +
                          it->second + " (tensor names must be unique across the model)");
      }
    }
    headers.push_back(std::move(h));
  }
  return headers;
}

// A slice from the middle of a BF16 tensor: whole weights, `want` bytes at most.
hub::ByteRange middle_slice(const std::string& file, const TensorInfo& t, uint64_t want) {
  const uint64_t length = std::min(want, t.byte_size()) & ~uint64_t{1};
  const uint64_t skip = ((t.byte_size() - length) / 2) & ~uint64_t{1};
  return {file, t.file_offset + skip, length};
}

// spec 7.4, as df11 compress groups a BF16 checkpoint; sizes predicted from a sample.
Status predict_bf16_remote(RemoteRepo& repo, const std::vector<std::string>& shards,
                           const std::vector<SafetensorsHeader>& headers,
                           const std::optional<std::string>& config_text, uint64_t sample_per_group,
                           InspectReport& report) {
  std::vector<TensorEntry> entries;
  std::vector<std::pair<size_t, const TensorInfo*>> where;  // shard, tensor of each entry
  for (size_t s = 0; s < headers.size(); ++s) {
    // The format keeps each header's tensors in data-offset order: original file order.
    for (const TensorInfo& t : headers[s].tensors) {
      entries.push_back(TensorEntry{t.name, t.dtype, t.shape, t.n_elements});
      where.emplace_back(s, &t);
    }
  }
  const Grouping grouping = group_tensors(entries, config_text, GroupBy::kBlock);
  for (const std::string& note : grouping.notes) report.notes.push_back(note);

  // Groups the loader's limits keep raw are known from their sizes (spec 3.7).
  std::vector<GroupReport> groups;
  std::vector<size_t> candidates;
  for (const GroupSpec& spec : grouping.groups) {
    GroupReport g;
    g.name = spec.name;
    g.file = shards[where[spec.members.front()].first];
    for (size_t m : spec.members) {
      const TensorInfo& t = *where[m].second;
      g.members.push_back(
          MemberReport{spec.alias_name.empty() ? t.name : spec.alias_name, t.shape, t.n_elements});
      g.n_elements += t.n_elements;
      if (!spec.alias_name.empty()) g.alias_of = t.name;
    }
    CompatSizes sizes;
    sizes.n_elements = g.n_elements;
    g.raw_reason = compat_violation(sizes);
    g.coded = g.raw_reason.empty();
    if (g.coded) candidates.push_back(groups.size());
    groups.push_back(std::move(g));
  }

  // One sample per member of each candidate, sized in proportion to the member.
  const uint64_t per_group = std::max<uint64_t>(
      kRemoteSampleBytesPerMember,
      std::min(sample_per_group, kRemoteSampleBytesTotal / std::max<size_t>(1, candidates.size())));
  std::vector<hub::ByteRange> ranges;
  std::vector<size_t> range_group;
  for (size_t gi : candidates) {
    const std::vector<size_t>& all = grouping.groups[gi].members;
    // Evenly spaced members when there are more than the cap (MoE experts).
    std::vector<size_t> picked;
    const size_t n_picked = std::min(all.size(), kRemoteSampledMembersPerGroup);
    for (size_t k = 0; k < n_picked; ++k) picked.push_back(all[k * all.size() / n_picked]);
    uint64_t picked_bytes = 0;
    for (size_t m : picked) picked_bytes += where[m].second->byte_size();
    for (size_t m : picked) {
      const TensorInfo& t = *where[m].second;
      const uint64_t share = static_cast<uint64_t>(static_cast<double>(per_group) *
                                                   static_cast<double>(t.byte_size()) /
                                                   static_cast<double>(picked_bytes));
      ranges.push_back(
          middle_slice(shards[where[m].first], t, std::max(share, kRemoteSampleBytesPerMember)));
      range_group.push_back(gi);
    }
  }
  DF11_ASSIGN_OR_RETURN(std::vector<std::string> samples, repo.read(ranges));

  std::map<size_t, Histogram> histograms;
  std::vector<uint16_t> weights;
  for (size_t r = 0; r < samples.size(); ++r) {
    weights.resize(samples[r].size() / 2);
    // Copied: the file's BF16 pairs are little-endian like the host (spec 6.2), but the
    // string's buffer is not promised 2-byte alignment.
    std::memcpy(weights.data(), samples[r].data(), 2 * weights.size());
    const Histogram h = exponent_histogram(weights);
    Histogram& sum = histograms[range_group[r]];
    for (int e = 0; e < 256; ++e) sum[e] += h[e];
    report.remote->sample_bytes += samples[r].size();
  }
  report.remote->sample_bytes_per_group = per_group;
  report.remote->sampled_groups = candidates.size();

  for (size_t gi : candidates) {
    GroupReport& g = groups[gi];
    const Histogram& sample = histograms[gi];
    auto plan = predict_group_plan(sample, g.n_elements, g.members.size());
    if (!plan) {
      if (plan.status().code() != ErrorCode::kUncodable) {
        return plan.status().with_context(g.file + ": group '" + g.name + "'");
      }
      g.coded = false;
      g.code = make_code_stats(sample, {}, 0);
      g.raw_reason =
          "the sample holds Inf, NaN or |x| >= 2^113 (exponents >= 240 cannot be "
          "coded): df11 compress stores the tensors holding them unchanged";
      continue;
    }
    g.bytes = part_bytes_of_plan(*plan);
    g.code = make_code_stats(sample, plan->code.length,
                             static_cast<uint32_t>(plan->luts.size() / kLutRowSize));
    g.max_block_weights = std::min<uint64_t>(block_starts_bound(*plan), g.n_elements);
    g.max_block_weights_exact = false;
  }

  std::set<size_t> raw(grouping.raw.begin(), grouping.raw.end());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (groups[gi].coded || !groups[gi].alias_of.empty()) continue;
    raw.insert(grouping.groups[gi].members.begin(), grouping.groups[gi].members.end());
  }
  for (size_t i : raw) {
    const TensorInfo& t = *where[i].second;
    report.raw.push_back(RawTensorReport{t.name, shards[where[i].first], t.dtype, t.byte_size()});
  }
  report.groups = std::move(groups);
  return Status::ok();
}

}  // namespace

Result<InspectReport> inspect_remote(const RemoteInspectOptions& options, Reporter& reporter,
                                     const CancelToken& cancel) {
  RemoteRepo repo;
  DF11_ASSIGN_OR_RETURN(repo.ref, hub::parse_repo_ref(options.repo));
  DF11_ASSIGN_OR_RETURN(repo.config, hub::config_from_environment());
  repo.control.threads = std::max(1, options.transfers);
  repo.control.cancelled = [&cancel] { return cancel.cancelled(); };
  repo.control.on_retry = [&reporter](const std::string& line) { reporter.note(line); };
  Result<hub::RemoteListing> listing = hub::list_repo(repo.config, repo.ref, repo.control);
  if (!listing) {
    DF11_RETURN_IF_ERROR(cancel.check());
    return listing.status();
  }
  repo.listing = std::move(listing).value();
  repo.stats.requests = 1;

  InspectReport report;
  report.path = options.repo;
  report.remote = RemoteRead{};
  report.remote->repo = repo.ref.repo_id;
  report.remote->revision = repo.ref.revision;
  report.remote->commit = repo.listing.commit;
  std::vector<std::string> top_level;
  for (const hub::RemoteFile& f : repo.listing.files) {
    repo.sizes.emplace(f.path, f.size);
    report.remote->repo_bytes += f.size;
    if (f.path.find('/') == std::string::npos) top_level.push_back(f.path);
  }

  std::optional<std::string> config_text, index_text;
  std::string index_name;
  Status s = read_side_texts(repo, config_text, index_text, index_name);
  std::vector<std::string> shards;
  if (s.is_ok()) {
    Result<std::vector<std::string>> selected =
        checkpoint_shards(top_level, index_text, repo.label(index_name));
    if (selected) shards = std::move(selected).value();
    s = selected.status();
  }
  if (s.is_ok() && shards.empty()) {
    s = Status(ErrorCode::kNotFound, options.repo +
                                         ": no *.safetensors file at the top level "
                                         "of the repo (a diffusers pipeline? pull it "
                                         "and inspect a component folder)");
  }
  std::vector<SafetensorsHeader> headers;
  if (s.is_ok()) {
    reporter.detail("reading the headers of " + count_of(shards.size(), "shard") + " of " +
                    options.repo + " at " + repo.listing.commit);
    Result<std::vector<SafetensorsHeader>> read = read_headers(repo, shards);
    if (read) headers = std::move(read).value();
    s = read.status();
  }
  if (s.is_ok()) {
    std::vector<const SafetensorsHeader*> pointers;
    for (const SafetensorsHeader& h : headers) pointers.push_back(&h);
    report.dtypes = dtype_shares(pointers);
    for (size_t i = 0; i < shards.size(); ++i) {
      report.files.push_back(
          FileReport{shards[i], headers[i].file_size, headers[i].tensors.size()});
    }
    const bool df11 = std::any_of(headers.begin(), headers.end(),
                                  [](const SafetensorsHeader& h) { return is_df11_header(h); });
    if (df11) {
      s = describe_df11_checkpoint(pointers, shards, config_text, options.repo, report);
    } else {
      report.kind = CheckpointKind::kBf16;
      s = predict_bf16_remote(repo, shards, headers, config_text, options.sample_bytes_per_group,
                              report);
    }
  }
  if (!s.is_ok()) {
    // An interruption reads as the token's reason, not as a failed request.
    DF11_RETURN_IF_ERROR(cancel.check());
    return s;
  }
  report.remote->bytes_read = repo.stats.bytes_received;
  report.remote->requests = repo.stats.requests;
  return report;
}

}  // namespace df11::app
