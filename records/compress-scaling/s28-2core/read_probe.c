// Stop 28 probe: the count pass over a tmpfs file, through a mapping (MADV_POPULATE_READ,
// count, MADV_DONTNEED per chunk) or by pread into one buffer. CPU-s per GB of the file.
// Prints CPU-s per GB of the timed pass, then the whole process's user and sys seconds.
// cc -O2 -march=native read_probe.c; ./a.out FILE m|r CHUNK_BYTES
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
static uint32_t h[8][256];
static void count(const uint16_t* p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) h[k][(p[i + k] >> 7) & 0xff]++;
  for (; i < n; ++i) h[0][(p[i] >> 7) & 0xff]++;
}
static double cpu(void) {
  struct rusage r; getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}
int main(int argc, char** argv) {
  int fd = open(argv[1], O_RDONLY);
  struct stat st; fstat(fd, &st);
  size_t size = st.st_size, chunk = atol(argv[3]);
  double c0 = cpu();
  if (argv[2][0] == 'm') {
    uint8_t* base = mmap(0, size, PROT_READ, MAP_SHARED, fd, 0);
    for (size_t off = 0; off < size; off += chunk) {
      size_t len = size - off < chunk ? size - off : chunk;
      madvise(base + off, len, MADV_POPULATE_READ);
      count((const uint16_t*)(base + off), len / 2);
      madvise(base + off, len, MADV_DONTNEED);
    }
  } else {
    uint8_t* buf = aligned_alloc(4096, chunk);
    for (size_t off = 0; off < size; off += chunk) {
      ssize_t r = pread(fd, buf, chunk, off);
      count((const uint16_t*)buf, r / 2);
    }
  }
  double c1 = cpu();
  uint64_t s = 0; for (int k = 0; k < 8; ++k) for (int e = 0; e < 256; ++e) s += h[k][e] * (uint64_t)e;
  struct rusage r; getrusage(RUSAGE_SELF, &r);
  printf("%s chunk %zu: cpu %.3f s per GB (user %.3f sys %.3f) %lu\n", argv[2], chunk, (c1 - c0) / (size / 1e9), r.ru_utime.tv_sec + r.ru_utime.tv_usec/1e6, r.ru_stime.tv_sec + r.ru_stime.tv_usec/1e6, s);
  return 0;
}
