// Host side of the kernel's inputs: validation against the output and KernelGroup
// construction (kernel_group.h).
#include "kernel_group.h"

#include <cstdint>
#include <string>

namespace df11::cuda::detail {
namespace {

bool aligned(const void* p, uintptr_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace

KernelGroup make_kernel_group(const GroupView& host, const GroupInfo& info, const uint8_t* luts,
                              const uint8_t* stream, const uint8_t* sign_mantissa,
                              const uint8_t* output_positions, const uint8_t* gaps, uint16_t* out) {
  KernelGroup k{};
  k.luts = luts;
  k.stream = stream;
  k.sign_mantissa = sign_mantissa;
  k.output_positions = output_positions;
  k.gaps = gaps;
  k.out = out;
  k.n_bytes = info.n_bytes;
  k.gap_bytes = host.gaps.size();
  k.n_elements = static_cast<uint32_t>(info.n_elements);  // validated: < 2^32
  k.n_blocks = static_cast<uint32_t>(info.n_blocks);
  k.first_block = 0;
  k.n_luts = info.n_luts;
  k.flags = 0;
  k.row_depths = 0;
  for (uint32_t r = 0; r < kTableRows; ++r) {
    const int d = info.lut_row_depth[r];
    const uint64_t v = d >= 0 && d <= 3 ? static_cast<uint64_t>(d) : kUnreachableRow;
    k.row_depths |= v << (3 * r);
  }
  if (aligned(stream, 8)) k.flags |= kStreamAligned8;
  if (aligned(output_positions, 4)) k.flags |= kOpAligned4;
  // Block b is interior when its window bytes and the next window's first 4 bytes, gap
  // fields 512b .. 512(b+1) and output positions b .. b+2 are all inside their arrays:
  // (b + 1) * 4096 + 8 <= n_bytes (which also implies b + 2 <= n_blocks).
  k.interior_blocks = 0;
  if (aligned(stream, 8) && aligned(output_positions, 4) && info.n_bytes >= kBytesPerBlock + 8) {
    k.interior_blocks = static_cast<uint32_t>((info.n_bytes - 8) / kBytesPerBlock);
  }
  if (aligned(sign_mantissa, 16)) k.flags |= kSignMantissaAligned16;
  if (aligned(out, 16)) k.flags |= kOutputAligned16;
  return k;
}

Result<GroupInfo> validate_with_output(const GroupView& group, size_t out_size,
                                       const std::string& what) {
  DF11_ASSIGN_OR_RETURN(GroupInfo info, validate_group(group, what));
  if (out_size != info.n_elements) {
    return Status(ErrorCode::kInvalidArgument, what + ": output holds " + std::to_string(out_size) +
                                                   " weights, the group has " +
                                                   std::to_string(info.n_elements));
  }
  return info;
}

}  // namespace df11::cuda::detail
