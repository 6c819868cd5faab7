// Host emulation of decode_kernel.cu: the same per-window decode, block scan, checks,
// compacted staging and joining (decode_core.h), run thread by thread on the CPU. It exists
// so that the kernel's logic is tested on machines without a GPU (CI); it is not fast.
#include <array>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "cuda_emulation.h"
#include "decode_core.h"
#include "emulated_launch.h"
#include "kernel_group.h"
#include "status_record.h"

namespace df11::cuda {

namespace detail {

Status emulate_group_launch(const GroupView& group, std::span<uint16_t> out,
                            const std::string& what, uint32_t epoch,
                            GroupStatusRecord& workspace_record) {
  try {
    DF11_ASSIGN_OR_RETURN(const GroupInfo info,
                          detail::validate_with_output(group, out.size(), what));
    const KernelGroup g = make_kernel_group(
        group, info, group.luts.data(), group.encoded_exponent.data(), group.sign_mantissa.data(),
        group.output_positions.data(), group.gaps.data(), out.data());

    std::vector<uint16_t> table_rows(kTableEntries);
    const uint32_t min_length = shortest_code_length(info);  // the kernel takes the plan's
    for (uint32_t i = 0; i < kTableEntries; ++i) {
      table_rows[i] =
          static_cast<uint16_t>(table_entry(g.luts, g.n_luts, g.row_depths, min_length, i));
    }
    const auto table = [&](uint32_t i) { return uint32_t{table_rows[i]}; };
    std::vector<uint32_t> multi_rows(kMultiEntries);
    for (uint32_t i = 0; i < kMultiEntries; ++i) multi_rows[i] = multi_entry(table, i);
    const auto multi = [&](uint32_t i) { return multi_rows[i]; };

    const uint32_t staging_bytes = staging_bytes_for(info.max_block_weights);
    std::vector<uint8_t> staging(staging_bytes);
    std::vector<WindowInputs> in(kWindowsPerBlock);
    std::vector<WindowResult> res(kWindowsPerBlock);
    // The kernel's slots: 64 exponents (+1 uncounted byte) per thread, kept across blocks.
    std::vector<std::array<uint8_t, 4 * kExponentWords + 4>> slots(kWindowsPerBlock);
    GroupStatusRecord record{};  // this launch's report, raised into the workspace at the end

    for (uint32_t b = 0; b < g.n_blocks && record.key == 0; ++b) {
      uint32_t total = 0;
      for (uint32_t t = 0; t < kWindowsPerBlock; ++t) {
        in[t] = load_window_inputs(g, b, t);
        // The kernel's slot: words past the last one written keep older contents.
        res[t] =
            decode_window(multi, table, in[t].w0, in[t].w1, in[t].w2, in[t].gap, 0,
                          [&](uint32_t j, uint32_t v) { slots[t][j] = static_cast<uint8_t>(v); });
        total += res[t].count;
      }
      // Output positions are block-uniform: thread 0's copy stands for all.
      uint32_t op1 = std::min(in[0].op1, g.n_elements);
      const uint32_t op0 = std::min(in[0].op0, op1);
      const uint32_t expected = op1 - op0;
      if (expected > staging_bytes - 15) {  // the validated host copy never gets here
        record = {record_key(epoch, b, kProblemTooMany), expected, 0};
        break;
      }
      const uint32_t op2 = std::min(std::max(in[0].op2, op1), g.n_elements);
      const BlockFacts facts{b, g.n_blocks, expected, op2 - op1, total};

      // Checks of every window; the block reports its lowest problem, as the kernel does.
      uint32_t block_problem = kProblemNone;
      uint32_t block_detail = 0;
      auto note = [&](uint32_t problem, uint32_t detail) {
        if (problem != kProblemNone && first_problem(block_problem, problem) == problem &&
            problem != block_problem) {
          block_problem = problem;
          block_detail = detail;
        }
      };
      uint32_t prefix = 0;
      std::vector<uint32_t> prefixes(kWindowsPerBlock);
      for (uint32_t t = 0; t < kWindowsPerBlock; ++t) {
        prefixes[t] = prefix;
        uint32_t end_check = 0;
        const uint32_t problem =
            window_problem(facts, t, prefix, res[t], in[t].gap, in[t].gap_next, end_check);
        note(problem, problem == kProblemFirstGap ? in[t].gap : t);
        if (end_check != 0) {
          const uint32_t e =
              window_end_after(table, in[t].w0, in[t].w1, in[t].w2, in[t].gap, end_check);
          note(stream_end_problem(e, uint64_t{b} * kWindowsPerBlock + t, g.n_bytes), t);
        }
        prefix += res[t].count;
      }
      if (!count_ok(facts)) note(kProblemCount, total);
      if (block_problem != kProblemNone) {
        record = {record_key(epoch, b, block_problem), block_detail, 0};
        break;
      }

      std::fill(staging.begin(), staging.end(), 0);
      for (uint32_t t = 0; t < kWindowsPerBlock; ++t) {
        const uint32_t keep =
            prefixes[t] < expected ? std::min(res[t].count, expected - prefixes[t]) : 0;
        scatter_exponents(
            [&](uint32_t q) { return load_le32(slots[t].data() + 4 * q); },
            prefixes[t] + (op0 % 16), keep,
            [&](uint32_t word, uint32_t v) { store_le32(staging.data() + 4 * word, v); },
            [&](uint32_t word, uint32_t v) {
              store_le32(staging.data() + 4 * word, load_le32(staging.data() + 4 * word) | v);
            });
      }
      // The kernel joins 8 weights at a time with join4; the emulation does the same.
      const uint64_t base = op0 & ~15u;
      for (uint64_t gstart = base; gstart < op1; gstart += kOutputUnit) {
        uint32_t sm[2] = {0, 0};
        uint32_t ex[2];
        for (uint32_t k = 0; k < kOutputUnit; ++k) {
          if (gstart + k < g.n_elements) {
            sm[k / 4] |= uint32_t{g.sign_mantissa[gstart + k]} << (8 * (k % 4));
          }
        }
        for (uint32_t q = 0; q < 2; ++q)
          ex[q] = load_le32(staging.data() + (gstart - base) + 4 * q);
        uint32_t joined[4];
        for (uint32_t q = 0; q < 2; ++q) join4(sm[q], ex[q], joined[2 * q], joined[2 * q + 1]);
        for (uint32_t k = 0; k < kOutputUnit; ++k) {
          const uint64_t i = gstart + k;
          if (i >= op0 && i < op1) out[i] = static_cast<uint16_t>(joined[k / 2] >> (16 * (k % 2)));
        }
      }
    }
    if (record.key != 0) raise_record(workspace_record, record.key, record.detail);
    return Status::ok();
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kResourceLimit, what + ": out of memory while decoding");
  }
}

}  // namespace detail

Status decode_group_emulated(const GroupView& group, std::span<uint16_t> out,
                             const std::string& what) {
  detail::GroupStatusRecord record{};
  DF11_RETURN_IF_ERROR(detail::emulate_group_launch(group, out, what, 1, record));
  return detail::group_record_status(record, 1, what);
}

}  // namespace df11::cuda
