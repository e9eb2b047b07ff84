// A classification model's validation pass: Ultralytics 8.4's ClassificationValidator (eval mode,
// softmax probabilities, top-1 / top-5 against each image's class, the confusion matrix of the
// top-1 class, the first batches' pictures) with the task's loss on the logits.
#include <chrono>

#include "validation.hpp"
#include "yolotrain/plots/batch_plots.hpp"

namespace yolotrain::engine {

std::optional<ValidationReport> run_classify_validation(ValidationPass pass) {
  const auto started = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  const bool was_training = pass.net->is_training();
  pass.net->eval();
  metrics::ClassifyValidator validator(pass.net->nc());
  ValidationReport report;
  const bool finished = for_each_batch(pass, report, [&](const nn::HeadOutputs& heads, const data::Batch& b) {
    const at::Tensor probs = nn::ClassifyImpl::probabilities(heads.logits);
    validator.update(probs, b.cls);
    if (pass.plots && b.index < 3) {
      plots::plot_classify_validation_batch(*pass.plots, b, probs, pass.net->names(), pass.plot_dir);
    }
  });
  if (was_training) pass.net->train();
  if (!finished) return std::nullopt;
  report.classify = validator.finalize();
  report.names = pass.net->names();
  report.images = validator.seen();
  report.images_per_class = validator.images_per_class();
  report.instances_per_class = validator.images_per_class();
  report.confusion = validator.confusion();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace yolotrain::engine
