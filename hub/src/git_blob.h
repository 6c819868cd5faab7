// The git object id of a file's content ("blob <size>\0<bytes>", SHA-1), which the Hub lists
// as a regular (non-LFS) file's blobId: how push tells that a small file on the Hub already
// has the folder's bytes. Internal to df11_hub.
#pragma once

#include <string>
#include <string_view>

namespace df11::hub {

// 40 lowercase hex digits.
std::string git_blob_id(std::string_view content);

}  // namespace df11::hub
