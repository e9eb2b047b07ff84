#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace yolotrain::lifecycle {

/// The Prometheus text exposition (node_exporter's textfile collector) of a status.json document
/// as RunStatus writes it: yolotrain_state (one series per state, 1 for the current one),
/// yolotrain_epoch, yolotrain_step, yolotrain_last_progress_timestamp_seconds,
/// yolotrain_last_checkpoint_timestamp_seconds, yolotrain_images_per_second, the figures as one
/// family yolotrain_metric{name="<the figure's name>"} (a YOLO run: name="metrics/mAP50(B)", ...),
/// yolotrain_resident_memory_bytes and the CUDA memory gauges.
/// Every series carries the label run="<run>".
std::string prometheus_text(const nlohmann::ordered_json& status, const std::string& run);

}  // namespace yolotrain::lifecycle
