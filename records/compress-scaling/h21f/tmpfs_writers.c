// How tmpfs page allocation scales with writers, the way decompress writes: W threads each
// write GB gigabytes in 8 MiB pwrite()s from a reused buffer, either into a file of their own
// ("own", decompress's one writer per file) or into disjoint ranges of one shared file
// ("shared"). Prints the aggregate GB/s and the process's user and system seconds (per GB).
// The files are deleted afterwards (not timed). Build: cc -O2 -pthread tmpfs_writers.c -o
// tmpfs_writers; run: ./tmpfs_writers own|shared W GB DIR
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const size_t kPiece = (size_t)8 << 20;
static size_t per_writer;
static int shared_fd = -1;
static char dir[4096];

static void* writer(void* arg) {
  const size_t w = (size_t)arg;
  char* buf = malloc(kPiece);
  memset(buf, (int)(w + 1), kPiece);
  int fd = shared_fd;
  char path[4200];
  if (fd < 0) {
    snprintf(path, sizeof path, "%s/tmpfs_writers.%zu", dir, w);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)per_writer) != 0) return perror(path), NULL;
  }
  const size_t base = shared_fd < 0 ? 0 : w * per_writer;
  for (size_t o = 0; o < per_writer; o += kPiece) {
    buf[0] = (char)o;  // not all pieces alike
    if (pwrite(fd, buf, kPiece, (off_t)(base + o)) != (ssize_t)kPiece) perror("pwrite");
  }
  if (shared_fd < 0) close(fd);
  free(buf);
  return NULL;
}

static double secs(struct timeval t) { return (double)t.tv_sec + t.tv_usec * 1e-6; }

int main(int argc, char** argv) {
  if (argc != 5) return fprintf(stderr, "usage: %s own|shared W GB DIR\n", argv[0]), 2;
  const int shared = strcmp(argv[1], "shared") == 0;
  const size_t w = (size_t)atoi(argv[2]);
  const double gb = atof(argv[3]);
  snprintf(dir, sizeof dir, "%s", argv[4]);
  per_writer = ((size_t)(gb * 1e9 / w) / kPiece) * kPiece;
  char path[4200];
  snprintf(path, sizeof path, "%s/tmpfs_writers.shared", dir);
  if (shared) {
    shared_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (shared_fd < 0 || ftruncate(shared_fd, (off_t)(per_writer * w)) != 0) return perror(path), 1;
  }
  struct rusage r0, r1;
  struct timespec a, b;
  getrusage(RUSAGE_SELF, &r0);
  clock_gettime(CLOCK_MONOTONIC, &a);
  pthread_t t[256];
  for (size_t i = 0; i < w && i < 256; ++i) pthread_create(&t[i], NULL, writer, (void*)i);
  for (size_t i = 0; i < w && i < 256; ++i) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  getrusage(RUSAGE_SELF, &r1);
  const double wall = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
  const double total = (double)(per_writer * w) / 1e9;
  const double user = secs(r1.ru_utime) - secs(r0.ru_utime);
  const double sys = secs(r1.ru_stime) - secs(r0.ru_stime);
  printf("%-6s writers %2zu: %.2f GB in %.3f s = %5.2f GB/s, user %.2f s sys %.2f s (%.3f sys s/GB)\n",
         argv[1], w, total, wall, total / wall, user, sys, sys / total);
  if (shared) unlink(path);
  for (size_t i = 0; !shared && i < w; ++i) {
    snprintf(path, sizeof path, "%s/tmpfs_writers.%zu", dir, i);
    unlink(path);
  }
  return 0;
}
