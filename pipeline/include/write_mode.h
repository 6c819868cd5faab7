// How compress and decompress write an output file's bytes (CompressOptions::write_mode,
// DecompressOptions::write_mode; pipeline/src/file_writer.h).
#pragma once

namespace df11::app {

// kPwrite: pwrite() from the one stream that produces the file. kMapped: through a shared
// mapping of the file, each write's pages spread over the threads (mapped_writer.h). A tmpfs
// file takes one write() at a time, so only kMapped lets one large file be written faster
// than one writer can (16-vCPU Xeon, one /dev/shm file: 4.58 GB/s by 16 threads against
// pwrite's 2.77), at about twice the CPU time per page (a fault, a zeroing and a page-table
// entry per 4 KiB): on 2 cores decompress takes 1.37x the CPU time. Not the default until
// compress and decompress as a whole are measured faster with it on many cores
// (records/compress-scaling/h21g/writes.sh).
enum class WriteMode { kPwrite, kMapped };

}  // namespace df11::app
