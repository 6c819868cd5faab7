// decompress for DF11 folders published by the dfloat11 tools (no df11 metadata, spec 7.8):
// the original files' bytes were not recorded, so the result is a new BF16 checkpoint with the
// same tensors: each group decoded into the weights pattern_dict names (shapes from
// config.json or --like), every other tensor copied, config.json without dfloat11_config.
#pragma once

#include <filesystem>
#include <optional>

#include "df11/cancel.h"
#include "df11/decompress.h"
#include "df11/df11_folder.h"
#include "df11/member_shapes.h"
#include "df11/model_folder.h"
#include "df11/published_folder.h"
#include "df11/reporter.h"
#include "df11/status.h"

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
