#pragma once

/// Remote storage and reporting: a run folder mirrored to S3-compatible object storage (an S3
/// client, the mirror that uploads what a lifecycle::CheckpointStore writes, downloads of the
/// newest checkpoint); a run's figures pushed to a Prometheus Pushgateway (MetricsPusher) and its
/// progress to Kubeflow Trainer (KubeflowProgress).
/// Its own library, yolotrain::remote: the one that links libcurl and pugixml.
#include "yolotrain/lifecycle.hpp"
#include "yolotrain/remote/kubeflow_progress.hpp"
#include "yolotrain/remote/metrics_push.hpp"
#include "yolotrain/remote/remote_mirror.hpp"
#include "yolotrain/remote/s3_client.hpp"
