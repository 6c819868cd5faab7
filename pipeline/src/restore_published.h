// decompress for DF11 folders published by the dfloat11 tools (no df11 metadata, spec 7.8):
// the original files' bytes were not recorded, so the result is a new BF16 checkpoint with the
// same tensors: each group decoded into the weights pattern_dict names (shapes from
// config.json or --like), every other tensor copied, config.json without dfloat11_config.
#pragma once

#include <filesystem>
#include <optional>

#include "cancel.h"
#include "decompress.h"
#include "df11/status.h"
#include "df11_folder.h"
#include "member_shapes.h"
#include "model_folder.h"
#include "published_folder.h"
#include "reporter.h"

namespace df11::app {

// Reads `model`'s groups with config.json's pattern_dict and gives every member a shape from
// `shapes`. kBadConfig without a usable pattern_dict; kUnsupported naming the weights whose
// shapes are unknown (suggesting --like); kBadShape where a shape disagrees with the
// element count the group holds. A head tied to its embedding by config.json and decoding
// identically is left out (the original checkpoint stores the embedding only).
Result<PublishedFolder> open_published_folder(ModelFolder model, const MemberShapes& shapes,
                                              const CancelToken& cancel);

// The whole of decompress for such a folder.
Result<DecompressSummary> restore_published_folder(ModelFolder model,
                                                   const DecompressOptions& options,
                                                   Reporter& reporter, const CancelToken& cancel);

}  // namespace df11::app
