#pragma once
// Where a run trains and what it starts from, resolved before the run exists: the run folder
// (locked by rank 0), the bucket it mirrors to (rank 0, remote=), the checkpoint it resumes and
// the arguments it adopts from that checkpoint. The run is built from a finished plan.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "rank_group.hpp"
#include "remote_run.hpp"
#include "yolotrain/engine/train_config.hpp"
#include "yolotrain/lifecycle/checkpoint/checkpoint_store.hpp"
#include "yolotrain/lifecycle/files/folder_lock.hpp"

namespace yolotrain::engine {

struct RunPlan {
  /// The run's arguments: as given, or, on a resume, the checkpoint's with those a resumed run
  /// may change (run_plan.cpp names them) taken from the given ones.
  TrainConfig cfg;
  std::filesystem::path run_dir;
  std::optional<lifecycle::FolderLock> lock;  ///< rank 0: one writer per run folder
  std::unique_ptr<detail::RemoteRun> remote;  ///< rank 0 with remote=: the folder mirrored to a bucket
  std::optional<lifecycle::Checkpoint> resume_from;  ///< empty: a fresh start
  std::filesystem::path resume_file;                 ///< resume_from's file
};

/// Rank 0 finds the run folder and the checkpoint (resume=false|true|FILE|FOLDER|s3://...), locks
/// the folder and opens the bucket; the other ranks read the same checkpoint. Throws ConfigError
/// for a plan the arguments make impossible (no such checkpoint, an occupied folder, a finished
/// run, a bucket holding another run) and Error when no checkpoint there can be used.
RunPlan resolve_run(TrainConfig cfg, RankGroup& ranks, const std::function<void(const std::string&)>& say);

}  // namespace yolotrain::engine
