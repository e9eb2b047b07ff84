#pragma once

/// A cloud's notice that it takes this machine back (AWS spot, GCE preemption and maintenance,
/// Azure Scheduled Events), read from the instance's metadata server; the cloud named by the
/// machine's DMI strings. Its own library, yolotrain::cloud (libcurl); yolotrain's trainer uses it
/// for `preemption=` (docs/engine.md "Preemption notices").
#include "yolotrain/cloud/cloud_detect.hpp"
#include "yolotrain/cloud/notice.hpp"
#include "yolotrain/cloud/notice_watcher.hpp"
