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
  std::int64_t batches = 0;
  const auto stopped = [&] { return pass.token && pass.token->stop_requested(); };
  pass.loader->seek(0, 0);
  while (auto b = pass.loader->next()) {
    if (stopped()) break;
    const nn::HeadOutputs heads =
        pass.net->forward_heads(data::preprocess_images(b->img, pass.device).contiguous(pass.memory_format));
    if (pass.criterion) {
      const at::Tensor items = pass.criterion(heads, *b).to(torch::kCPU, torch::kDouble).reshape({-1});
      report.loss.resize(static_cast<std::size_t>(items.numel()), 0.0);
      for (std::size_t i = 0; i < report.loss.size(); ++i) report.loss[i] += items[std::int64_t(i)].item<double>();
    }
    ++batches;
    const at::Tensor probs = nn::ClassifyImpl::probabilities(heads.logits);
    validator.update(probs, b->cls);
    if (pass.plots && b->index < 3) {
      plots::plot_classify_validation_batch(*pass.plots, *b, probs, pass.net->names(), pass.plot_dir);
    }
  }
  if (was_training) pass.net->train();
  if (stopped()) return std::nullopt;  // a loader wait ended on the stop, or the loop broke: not validated
  for (auto& l : report.loss) l /= double(std::max<std::int64_t>(batches, 1));
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
