#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace yolotrain::predict {

/// What a predict `source` names, as Ultralytics' LoadImagesAndVideos expands it.
struct SourceFiles {
  std::vector<std::filesystem::path> images;  ///< image files (absolute), in order
  std::vector<std::filesystem::path> videos;  ///< video files found (this build reads images only)
};

/// Expands `source`: an image file, a folder (its files, sorted), a glob pattern (`*`, `?`,
/// `[...]`; sorted), or a `.txt` file listing one of those per line (lines sorted; relative paths
/// are tried against the working directory, then the list's folder). Files are kept by their
/// extension: Ultralytics' image formats (bmp dng jpeg jpg mpo png tif tiff webp pfm) and video
/// formats; anything else is left out as Ultralytics does. Throws yolotrain::Error naming the
/// entry that does not exist, or the source when it holds no images or videos.
SourceFiles expand_source(const std::string& source);

}  // namespace yolotrain::predict
