#pragma once

/// yolotrain::plots — what a person looks at: batches of images with their boxes, results.png and
/// the metric curves, drawn and written off the training thread.
#include "yolotrain/plots/batch_plots.hpp"
#include "yolotrain/plots/box_label.hpp"
#include "yolotrain/plots/plot_curves.hpp"
#include "yolotrain/plots/plot_images.hpp"
#include "yolotrain/plots/plot_results.hpp"
#include "yolotrain/plots/plot_writer.hpp"
