// Can several threads fill ONE tmpfs file faster than one? decompress restores each original
// file with one writer, because a tmpfs file takes one write() at a time (the inode lock); the
// largest file (5 GB of an 8B model) then bounds decompress on many cores. W threads fill
// disjoint ranges of one new file of GB gigabytes in 8 MiB pieces, each copied from a reused
// buffer of its own, by:
//   pwrite     pwrite() at the piece's offset (the file's lock serialises them)
//   fpwrite    one posix_fallocate of the whole file (one thread, timed), then pwrite
//   mmap       ftruncate, MAP_SHARED mapping, memcpy into it (page faults allocate the pages)
//   populate   as mmap, each piece first allocated by MADV_POPULATE_WRITE (a full tmpfs is
//              then an error return, not SIGBUS)
//   fmmap      posix_fallocate (one thread, timed), then memcpy into the mapping
//   own        reference: each thread pwrite()s a file of its own (GB/W each)
// Prints wall seconds, GB/s, and the process's user and system seconds; the file is deleted
// afterwards (not timed). Build: cc -O2 -pthread one_file_writers.c -o one_file_writers
// Run: ./one_file_writers MODE W GB DIR
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static const size_t kPiece = (size_t)8 << 20;
static size_t total, per_thread;
static int fd = -1;
static char* map;
static const char* mode;
static char dir[4096];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void* worker(void* arg) {
  const size_t w = (size_t)arg;
  char* buf = malloc(kPiece);
  for (size_t i = 0; i < kPiece; ++i) buf[i] = (char)(i * 131 + w);
  const size_t base = w * per_thread;
  int own = -1;
  char path[4200];
  if (strcmp(mode, "own") == 0) {
    snprintf(path, sizeof path, "%s/one_file_writers.own.%zu", dir, w);
    own = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (own < 0 || ftruncate(own, (off_t)per_thread) != 0) return perror(path), NULL;
  }
  for (size_t o = 0; o < per_thread; o += kPiece) {
    const size_t n = per_thread - o < kPiece ? per_thread - o : kPiece;
    buf[0] = (char)o;  // not all pieces alike
    if (own >= 0) {
      if (pwrite(own, buf, n, (off_t)o) != (ssize_t)n) perror("pwrite");
    } else if (strcmp(mode, "pwrite") == 0 || strcmp(mode, "fpwrite") == 0) {
      if (pwrite(fd, buf, n, (off_t)(base + o)) != (ssize_t)n) perror("pwrite");
    } else {
      char* at = map + base + o;
      if (strcmp(mode, "populate") == 0 && madvise(at, n, MADV_POPULATE_WRITE) != 0) {
        perror("madvise(MADV_POPULATE_WRITE)");
        exit(1);
      }
      memcpy(at, buf, n);
    }
  }
  if (own >= 0) {
    close(own);
    unlink(path);  // timed, as an own-file writer's cost (small)
  }
  free(buf);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s pwrite|fpwrite|mmap|populate|fmmap|own W GB DIR\n", argv[0]);
    return 2;
  }
  mode = argv[1];
  const size_t writers = strtoul(argv[2], NULL, 10);
  total = (size_t)(atof(argv[3]) * 1e9) / kPiece * kPiece;
  snprintf(dir, sizeof dir, "%s", argv[4]);
  per_thread = total / writers / 4096 * 4096;
  total = per_thread * writers;
  char path[4200];
  snprintf(path, sizeof path, "%s/one_file_writers.shared", dir);
  const double t0 = now();
  double falloc = 0;
  if (strcmp(mode, "own") != 0) {
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)total) != 0) return perror(path), 1;
    if (mode[0] == 'f') {
      const int rc = posix_fallocate(fd, 0, (off_t)total);
      if (rc != 0) return fprintf(stderr, "posix_fallocate: %s\n", strerror(rc)), 1;
      falloc = now() - t0;
    }
    if (strstr(mode, "mmap") != NULL || strcmp(mode, "populate") == 0) {
      map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map == MAP_FAILED) return perror("mmap"), 1;
    }
  }
  pthread_t t[256];
  for (size_t w = 0; w < writers; ++w) pthread_create(&t[w], NULL, worker, (void*)w);
  for (size_t w = 0; w < writers; ++w) pthread_join(t[w], NULL);
  if (map != NULL) munmap(map, total);
  const double wall = now() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const double user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  const double sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  printf("%-9s W=%-2zu %.2f GB wall %.3f s %.2f GB/s fallocate %.3f s user %.3f sys %.3f\n", mode,
         writers, total / 1e9, wall, total / 1e9 / wall, falloc, user, sys);
  if (fd >= 0) {
    close(fd);
    unlink(path);
  }
  return 0;
}
