// Stop 28 probe: the scalar exponent count (as encoder/src/exponent_count.h) against an
// AVX-512BW count by compares over the 16 hottest exponents (byte accumulators, cold
// exponents counted scalar), on a file read into memory; checks both give the same counts.
// cc -O2 count_probe.c; ./a.out FILE
#define _GNU_SOURCE
#include <fcntl.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
typedef struct { uint32_t sub[8][256]; } EC;
static void scalar(const uint16_t* p, uint64_t n, EC* c) {
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v0, v1; memcpy(&v0, p + i, 8); memcpy(&v1, p + i + 4, 8);
    ++c->sub[0][(v0 >> 7) & 0xFF]; ++c->sub[1][(v0 >> 23) & 0xFF];
    ++c->sub[2][(v0 >> 39) & 0xFF]; ++c->sub[3][(v0 >> 55) & 0xFF];
    ++c->sub[4][(v1 >> 7) & 0xFF]; ++c->sub[5][(v1 >> 23) & 0xFF];
    ++c->sub[6][(v1 >> 39) & 0xFF]; ++c->sub[7][(v1 >> 55) & 0xFF];
  }
  for (; i < n; ++i) ++c->sub[i & 7][(p[i] >> 7) & 0xFF];
}
// Hot range [lo, lo+K): K byte accumulators; cold ones scalar.
#define K 16
__attribute__((target("avx512f,avx512bw"))) static void vec(const uint16_t* p, uint64_t n, EC* c, unsigned lo) {
  uint64_t i = 0;
  const __m512i vlo = _mm512_set1_epi8((char)lo);
  const __m512i vK = _mm512_set1_epi8(K);
  const __m512i one = _mm512_set1_epi8(1);
  uint64_t tot[K] = {0};
  while (i + 64 <= n) {
    __m512i acc[K];
    for (int k = 0; k < K; ++k) acc[k] = _mm512_setzero_si512();
    uint64_t stop = i + 64 * 255; if (stop > n) stop = n - (n - i) % 64;
    for (; i + 64 <= stop; i += 64) {
      __m512i a = _mm512_loadu_si512(p + i), b = _mm512_loadu_si512(p + i + 32);
      __m256i ea = _mm512_cvtepi16_epi8(_mm512_srli_epi16(a, 7));
      __m256i eb = _mm512_cvtepi16_epi8(_mm512_srli_epi16(b, 7));
      __m512i e = _mm512_inserti64x4(_mm512_castsi256_si512(ea), eb, 1);
      __m512i r = _mm512_sub_epi8(e, vlo);
      __mmask64 cold = _mm512_cmpge_epu8_mask(r, vK);
      for (int k = 0; k < K; ++k) {
        __mmask64 m = _mm512_cmpeq_epi8_mask(r, _mm512_set1_epi8(k));
        acc[k] = _mm512_mask_add_epi8(acc[k], m, acc[k], one);
      }
      while (cold) {
        int j = __builtin_ctzll(cold); cold &= cold - 1;
        uint16_t w = p[i + j];
        ++c->sub[j & 7][(w >> 7) & 0xFF];
      }
    }
    for (int k = 0; k < K; ++k) {
      __m512i s = _mm512_sad_epu8(acc[k], _mm512_setzero_si512());
      tot[k] += _mm512_reduce_add_epi64(s);
    }
  }
  for (int k = 0; k < K; ++k) c->sub[0][(lo + k) & 0xFF] += (uint32_t)tot[k];
  scalar(p + i, n - i, c);
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char** argv) {
  int fd = open(argv[1], O_RDONLY);
  struct stat st; fstat(fd, &st);
  size_t size = st.st_size & ~(size_t)1;
  uint16_t* p = malloc(size); pread(fd, p, size, 0);  // in RAM, like a populated mapping
  uint64_t n = size / 2;
  static EC a, b;
  scalar(p, n, &a);
  uint32_t tot[256] = {0};
  for (int e = 0; e < 256; ++e) for (int s = 0; s < 8; ++s) tot[e] += a.sub[s][e];
  // hot range: best K-window
  unsigned best = 0; uint64_t bs = 0;
  for (unsigned lo = 0; lo + K <= 256; ++lo) { uint64_t s = 0; for (int k = 0; k < K; ++k) s += tot[lo + k]; if (s > bs) { bs = s; best = lo; } }
  printf("hot [%u,%u): %.4f of weights\n", best, best + K, (double)bs / n);
  vec(p, n, &b, best);
  for (int e = 0; e < 256; ++e) { uint32_t s = 0; for (int k = 0; k < 8; ++k) s += b.sub[k][e]; if (s != tot[e]) { printf("MISMATCH %d\n", e); return 1; } }
  for (int r = 0; r < 3; ++r) {
    memset(&a, 0, sizeof a); double t0 = now(); scalar(p, n, &a); double t1 = now();
    memset(&b, 0, sizeof b); vec(p, n, &b, best); double t2 = now();
    printf("scalar %.3f s/GB  vec %.3f s/GB\n", (t1 - t0) / (size / 1e9), (t2 - t1) / (size / 1e9));
  }
}
