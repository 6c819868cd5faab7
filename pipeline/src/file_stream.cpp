#include "file_stream.h"

#include <algorithm>

namespace df11::app {

Status stream_file_range(const MappedFile& file, uint64_t offset, uint64_t length,
                         const ByteSink& sink, const CancelToken& cancel, uint64_t step_bytes) {
  for (uint64_t done = 0; done < length;) {
    DF11_RETURN_IF_ERROR(cancel.check());
    const uint64_t step = std::min(std::max<uint64_t>(step_bytes, 1), length - done);
    file.advise_willneed(offset + done, step);
    DF11_RETURN_IF_ERROR(sink(std::span<const uint8_t>(file.data() + offset + done, step)));
    file.advise_dontneed(offset + done, step);
    done += step;
  }
  return Status::ok();
}

}  // namespace df11::app
