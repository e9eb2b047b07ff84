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
/// A rectangle of a mosaic canvas that a tile covers (x, y, width, height; may be empty).
struct TileRect {
  int x = 0, y = 0, w = 0, h = 0;
};
/// Makes `canvas` a 2*imgsz square (its buffer reused, pixels not yet set), no boxes.
void mosaic_canvas(Labelled& canvas, int imgsz);
/// Places tile `i` (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right) of a mosaic centred at
/// (xc, yc) on `canvas`; appends the tile's boxes moved, clipped, zero-area ones dropped. Returns
/// the rectangle the tile covers.
TileRect mosaic_place(Labelled& canvas, const Image& tile, const std::vector<PixelBox>& boxes, int i,
                      std::pair<int, int> centre, int imgsz);
/// Fills what the four tiles left uncovered with 114 (Ultralytics fills the whole canvas first;
/// the pixels are the same, written once).
void mosaic_fill_rest(Labelled& canvas, const TileRect (&tiles)[4]);
/// Ultralytics' bbox_ioa(a, b) (utils/metrics.py): the intersection over b's area (eps 1e-7), in
/// float32 as numpy computes it; CopyPaste and CutMix choose by it.
float bbox_ioa(const PixelBox& a, const PixelBox& b);
/// random_perspective() reading `src` and writing `dst` (whose buffer is reused).
void random_perspective_into(const Labelled& src, Labelled& dst, const AugmentConfig& cfg, Rng& rng,
                             int border);

}  // namespace yolotrain::data::detail
