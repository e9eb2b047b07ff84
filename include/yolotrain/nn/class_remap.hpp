#pragma once
// Fine-tuning across datasets: a pretrained head's class rows moved to the new data's classes by
// name, as Ultralytics 8.4 does before it transfers the rest (cls_remap=True, its default).
#include <cstddef>
#include <string>
#include <vector>

#include "yolotrain/nn/weights.hpp"

namespace yolotrain::nn {

/// What remap_class_rows() did.
struct ClassRemap {
  std::size_t tensors = 0;  ///< class-logit tensors remapped (Ultralytics counts them as transferred)
  std::size_t matched = 0;  ///< the new classes whose name the pretrained weights have
  std::size_t nc = 0;       ///< the new classes
};

/// Ultralytics 8.4's BaseModel._remap_cls_by_names (nn/tasks.py:340-400): for each class of `to`
/// (the data's names) the class of `from` (the weights' names) with the same name, compared
/// stripped and in lower case; each class-logit convolution of the head (`...cv3.i.j` and
/// `...one2one_cv3.i.j` with nc outputs) in `model` then takes those rows of the same tensor in
/// `tensors` (a weight only where its other dimensions agree: the head's width c3 follows nc; the
/// bias always), and the tensor leaves `tensors` so that transfer_weights() does not copy it in the
/// weights' order. Nothing happens when either side has placeholder names ("0", "1", ...), no
/// name matches, or the names are the same in the same order (the plain transfer is then right).
ClassRemap remap_class_rows(torch::nn::Module& model, NamedTensors& tensors, const std::vector<std::string>& from,
                            const std::vector<std::string>& to);

}  // namespace yolotrain::nn
