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

Status FileWriter::set_mode(WriteMode mode, uint64_t size) {
  if (mode == WriteMode::kPwrite) return Status::ok();
  if (!MappedWriter::supported()) {
    return Status(ErrorCode::kUnsupported,
                  "--write-mode mapped: this kernel cannot populate a shared mapping "
                  "(MADV_POPULATE_WRITE, Linux 5.14), so a full disk would be a signal, not an "
                  "error: use --write-mode pwrite");
  }
  DF11_ASSIGN_OR_RETURN(MappedWriter mapped, MappedWriter::open(file_, size));
  mapped_.emplace(std::move(mapped));
  return Status::ok();
}

Status FileWriter::write(uint64_t offset, std::span<const uint8_t> bytes) const {
  if (mapped_) return mapped_->write(offset, bytes);
  DF11_RETURN_IF_ERROR(file_.pwrite_all(offset, bytes));
  if (hint_fd_ >= 0 && !bytes.empty()) {
    ::sync_file_range(hint_fd_, static_cast<off64_t>(offset), static_cast<off64_t>(bytes.size()),
                      SYNC_FILE_RANGE_WRITE);
  }
  return Status::ok();
}

}  // namespace df11::app
