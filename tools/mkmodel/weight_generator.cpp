#include "mkmodel/weight_generator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

namespace df11::mkmodel {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): a 64-bit counter passed through a strong mixer. Its
// state is one integer, so seeding a stream per chunk costs nothing.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return mix64(state_);
  }
  // Uniform in (0, 1], never 0 so that log() is finite.
  double uniform_open0() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Ziggurat method for the standard normal (Marsaglia and Tsang, 2000) with 128 layers.
// The fast path (about 99% of draws) costs one random word, a compare and a multiply; the
// layer index and the magnitude come from disjoint bits of the same 64-bit word.
constexpr int kLayers = 128;
constexpr double kTailStart = 3.442619855899;       // r: where the base layer's tail begins
constexpr double kLayerArea = 9.91256303526217e-3;  // v: area of each layer

struct ZigguratTables {
  std::array<uint32_t, kLayers> k{};  // accept |hz| < k[i] without evaluating the density
  std::array<float, kLayers> w{};     // x = hz * w[i]
  std::array<float, kLayers> f{};     // density at the layer's right edge

  ZigguratTables() {
    constexpr double m1 = 2147483648.0;  // 2^31: hz is a signed 32-bit value
    double dn = kTailStart;
    double tn = dn;
    const double q = kLayerArea / std::exp(-0.5 * dn * dn);
    k[0] = static_cast<uint32_t>((dn / q) * m1);
    k[1] = 0;
    w[0] = static_cast<float>(q / m1);
    w[kLayers - 1] = static_cast<float>(dn / m1);
    f[0] = 1.0f;
    f[kLayers - 1] = static_cast<float>(std::exp(-0.5 * dn * dn));
    for (int i = kLayers - 2; i >= 1; --i) {
      dn = std::sqrt(-2.0 * std::log(kLayerArea / dn + std::exp(-0.5 * dn * dn)));
      k[i + 1] = static_cast<uint32_t>((dn / tn) * m1);
      tn = dn;
      f[i] = static_cast<float>(std::exp(-0.5 * dn * dn));
      w[i] = static_cast<float>(dn / m1);
    }
  }
};

const ZigguratTables& tables() {
  static const ZigguratTables t;
  return t;
}

// Slow path: the draw fell outside the layer's rectangle core (or in the base layer's tail).
float normal_slow(SplitMix64& rng, int32_t hz, uint32_t iz, const ZigguratTables& t) {
  for (;;) {
    const double x = static_cast<double>(hz) * t.w[iz];
    if (iz == 0) {
      // Tail beyond r: Marsaglia's exponential rejection.
      double tx, ty;
      do {
        tx = -std::log(rng.uniform_open0()) / kTailStart;
        ty = -std::log(rng.uniform_open0());
      } while (ty + ty < tx * tx);
      return static_cast<float>(hz > 0 ? kTailStart + tx : -kTailStart - tx);
    }
    const double u = rng.uniform_open0();
    if (t.f[iz] + u * (t.f[iz - 1] - t.f[iz]) < std::exp(-0.5 * x * x)) {
      return static_cast<float>(x);
    }
    const uint64_t r = rng.next();
    iz = static_cast<uint32_t>(r & (kLayers - 1));
    hz = static_cast<int32_t>(static_cast<uint32_t>(r >> 32));
    const uint32_t mag = hz < 0 ? 0u - static_cast<uint32_t>(hz) : static_cast<uint32_t>(hz);
    if (mag < t.k[iz]) return static_cast<float>(hz) * t.w[iz];
  }
}

}  // namespace

uint64_t tensor_key(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

void generate_bf16(const GeneratorParams& params, uint64_t first_chunk, std::span<uint16_t> out) {
  const ZigguratTables& t = tables();
  const uint64_t stream_base = mix64(mix64(params.seed) ^ params.key);
  for (uint64_t start = 0; start < out.size(); start += kChunkWeights) {
    const uint64_t chunk = first_chunk + start / kChunkWeights;
    SplitMix64 rng(mix64(stream_base ^ mix64(chunk + 1)));
    const uint64_t end = std::min<uint64_t>(out.size(), start + kChunkWeights);
    for (uint64_t i = start; i < end; ++i) {
      // Bits 0..6: layer; bits 7..30: outlier lottery; bits 32..63: signed magnitude.
      const uint64_t r = rng.next();
      const auto iz = static_cast<uint32_t>(r & (kLayers - 1));
      const auto hz = static_cast<int32_t>(static_cast<uint32_t>(r >> 32));
      const uint32_t mag = hz < 0 ? 0u - static_cast<uint32_t>(hz) : static_cast<uint32_t>(hz);
      float x = mag < t.k[iz] ? static_cast<float>(hz) * t.w[iz] : normal_slow(rng, hz, iz, t);
      float value;
      if (params.kind == InitKind::kNorm) {
        value = 1.0f + static_cast<float>(kNormStd) * x;
      } else {
        value = x * params.std;
        if (static_cast<uint32_t>((r >> 7) & 0xFFFFFFu) < kOutlierThreshold24) {
          const float u = static_cast<float>(rng.next() >> 40) * 0x1.0p-24f;
          value *= kOutlierMinScale + kOutlierScaleSpan * u;
        }
      }
      out[i] = float_to_bf16(value);
    }
  }
}

}  // namespace df11::mkmodel
