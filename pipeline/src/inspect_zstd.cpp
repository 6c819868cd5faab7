#include "df11/inspect_zstd.h"

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace df11::app {
namespace {

struct CctxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

Status zstd_error(const char* what, size_t code) {
  return Status(ErrorCode::kInternal,
                std::string("zstd: ") + what + ": " + ZSTD_getErrorName(code));
}

}  // namespace

Result<uint64_t> zstd_frame_size(std::span<const uint8_t> bytes, int level) {
  std::unique_ptr<ZSTD_CCtx, CctxDeleter> cctx(ZSTD_createCCtx());
  if (!cctx) return Status(ErrorCode::kResourceLimit, "zstd: cannot create a context");
  size_t rc = ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
  if (ZSTD_isError(rc)) return zstd_error("level", rc);
  // Declaring the size lets zstd pick the parameters the zstd tool would for this input.
  rc = ZSTD_CCtx_setPledgedSrcSize(cctx.get(), bytes.size());
  if (ZSTD_isError(rc)) return zstd_error("size", rc);
  std::vector<uint8_t> out(ZSTD_CStreamOutSize());
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  uint64_t total = 0;
  for (;;) {
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    const size_t remaining = ZSTD_compressStream2(cctx.get(), &o, &in, ZSTD_e_end);
    if (ZSTD_isError(remaining)) return zstd_error("compress", remaining);
    total += o.pos;
    if (remaining == 0) break;
  }
  return total;
}

Result<ZstdBaseline> zstd_baseline(std::span<const uint8_t> bytes) {
  ZstdBaseline b;
  DF11_ASSIGN_OR_RETURN(b.fast.output_bytes, zstd_frame_size(bytes, kZstdFastLevel));
  b.fast.input_bytes = bytes.size();
  const auto sample = bytes.first(std::min<uint64_t>(bytes.size(), kZstdStrongSampleBytes));
  DF11_ASSIGN_OR_RETURN(b.strong.output_bytes, zstd_frame_size(sample, kZstdStrongLevel));
  b.strong.input_bytes = sample.size();
  b.strong.sampled = sample.size() < bytes.size();
  return b;
}

}  // namespace df11::app
