#include "file_writer.h"

#include <fcntl.h>
#include <unistd.h>

namespace df11::app {

FileWriter::FileWriter(const OutputFile& file) : file_(file) {
  // Best effort: without the descriptor writes still work, commit() just flushes more.
  hint_fd_ = ::open(file.temp_path().c_str(), O_WRONLY | O_CLOEXEC);
}

FileWriter::~FileWriter() {
  if (hint_fd_ >= 0) ::close(hint_fd_);
}

Status FileWriter::write(uint64_t offset, std::span<const uint8_t> bytes) const {
  DF11_RETURN_IF_ERROR(file_.pwrite_all(offset, bytes));
  if (hint_fd_ >= 0 && !bytes.empty()) {
    ::sync_file_range(hint_fd_, static_cast<off64_t>(offset), static_cast<off64_t>(bytes.size()),
                      SYNC_FILE_RANGE_WRITE);
  }
  return Status::ok();
}

}  // namespace df11::app
