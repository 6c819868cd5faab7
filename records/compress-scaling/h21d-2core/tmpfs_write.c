// Writes 1 GiB into a new file in 8 MiB pieces, the way decompress writes a shard, four ways,
// and prints the process's wall, user and system seconds:
//   pwrite    pwrite() from a reused 8 MiB buffer (main's path)
//   mmap      ftruncate + mmap(MAP_SHARED), each piece written in place (page faults)
//   populate  as mmap, each piece's pages first allocated with MADV_POPULATE_WRITE
//   populate2 as populate, each piece split between two threads
// Every mapped piece is dropped again with MADV_DONTNEED (as the prototype does).
// Build: cc -O2 -pthread tmpfs_write.c -o tmpfs_write; run: ./tmpfs_write MODE /dev/shm/FILE
#define _GNU_SOURCE
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

static const size_t kSize = (size_t)1 << 30, kPiece = (size_t)8 << 20;
static char* map;
static int populate;

static void* fill(void* arg) {  // arg: 0 = whole pieces, 1/2 = first/second half of each
  const size_t h = (size_t)arg;
  const size_t len = h == 0 ? kPiece : kPiece / 2, at = h == 2 ? kPiece / 2 : 0;
  for (size_t o = 0; o < kSize; o += kPiece) {
    char* p = map + o + at;
    if (populate && madvise(p, len, MADV_POPULATE_WRITE) != 0) perror("MADV_POPULATE_WRITE");
    memset(p, (int)(o >> 23), len);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const char* mode = argv[1];
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  const int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || ftruncate(fd, (off_t)kSize) != 0) return perror(argv[2]), 1;
  if (strcmp(mode, "pwrite") == 0) {
    char* buf = malloc(kPiece);
    for (size_t o = 0; o < kSize; o += kPiece) {
      memset(buf, (int)(o >> 23), kPiece);
      if (pwrite(fd, buf, kPiece, (off_t)o) != (ssize_t)kPiece) return perror("pwrite"), 1;
    }
    free(buf);
  } else {
    map = mmap(NULL, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return perror("mmap"), 1;
    populate = strncmp(mode, "populate", 8) == 0;
    if (strcmp(mode, "populate2") == 0) {
      pthread_t t;
      pthread_create(&t, NULL, fill, (void*)2);
      fill((void*)1);
      pthread_join(t, NULL);
    } else {
      fill((void*)0);
    }
    for (size_t o = 0; o < kSize; o += kPiece) madvise(map + o, kPiece, MADV_DONTNEED);
    munmap(map, kSize);
  }
  close(fd);
  clock_gettime(CLOCK_MONOTONIC, &b);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("%-9s wall %.3f user %.3f sys %.3f\n", mode,
         (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
         (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
  unlink(argv[2]);
  return 0;
}
