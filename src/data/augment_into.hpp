#pragma once
// The augmentations that write into buffers the caller keeps: the loader's workers reuse theirs
// for every sample, because a fresh 1-5 MB buffer per step costs page faults and mmap/munmap
// calls that serialise the threads (docs/data.md, "Where the time goes").
#include <utility>
#include <vector>

#include "yolotrain/data/augment.hpp"

namespace yolotrain::data::detail {

/// A mosaic's random centre (xc, yc) in [imgsz/2, 3*imgsz/2), drawn as Ultralytics does.
std::pair<int, int> mosaic_centre(int imgsz, Rng& rng);
/// Makes `canvas` an empty 2*imgsz square filled with 114 (its buffer reused), no boxes.
void mosaic_canvas(Labelled& canvas, int imgsz);
/// Places tile `i` (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right) of a mosaic centred at
/// (xc, yc) on `canvas`; appends the tile's boxes moved, clipped, zero-area ones dropped.
void mosaic_place(Labelled& canvas, const Image& tile, const std::vector<PixelBox>& boxes, int i,
                  std::pair<int, int> centre, int imgsz);
/// random_perspective() reading `src` and writing `dst` (whose buffer is reused).
void random_perspective_into(const Labelled& src, Labelled& dst, const AugmentConfig& cfg, Rng& rng,
                             int border);

}  // namespace yolotrain::data::detail
