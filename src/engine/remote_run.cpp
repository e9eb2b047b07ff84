#include "remote_run.hpp"

#include <chrono>
#include <thread>

#include "run_log.hpp"
#include "yolotrain/error.hpp"

namespace yolotrain::engine::detail {
namespace fs = std::filesystem;
namespace lc = yolotrain::lifecycle;
namespace {

constexpr const char* kSeries = "weights/last";  // the trainer's rotating checkpoints

// The bucket answers: a transient failure (a 503, a refused connection) is tried again three
// times over 3.5 s before the run is refused.
void check_access(const yolotrain::remote::S3Client& client, const yolotrain::remote::S3Location& location) {
  for (double wait_s = 0.5;; wait_s *= 2) {
    try {
      return client.check_access(location.key(""));
    } catch (const yolotrain::remote::S3Error& e) {
      if (!e.transient || wait_s > 2) throw;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
  }
}

}  // namespace

RemoteRun::RemoteRun(const std::string& url, const fs::path& run_dir, int keep_last, Say say)
    : run_dir_(run_dir), say_(std::move(say)) {
  try {
    const yolotrain::remote::S3Location location = yolotrain::remote::S3Location::parse(url);
    yolotrain::remote::S3Client client(yolotrain::remote::S3Settings::from_environment(), location.bucket);
    check_access(client, location);
    yolotrain::remote::RemoteMirrorOptions options;
    options.keep_last = keep_last;
    mirror_ = std::make_shared<yolotrain::remote::RemoteMirror>(std::move(client), location, run_dir_, options);
  } catch (const Error& e) {
    throw ConfigError("remote=" + url + ": " + e.what());
  }
  say_("remote: mirroring " + run_dir_.string() + " to " + url + " (" + mirror_->client().settings().endpoint + ")");
}

RemoteRun::~RemoteRun() { mirror_->set_listener(nullptr); }

void RemoteRun::refuse_existing_run() const {
  const auto found = yolotrain::remote::list_remote_checkpoints(mirror_->client(), mirror_->location(), kSeries);
  if (found.empty()) return;
  throw ConfigError("remote=" + mirror_->location().url() + " already holds checkpoints of a run (newest: step " +
                    std::to_string(found.front().step) +
                    "); resume it with resume=true, or give this run another prefix");
}

fs::path RemoteRun::fetch_newer(std::int64_t local_step) {
  const auto& client = mirror_->client();
  const auto& location = mirror_->location();
  const yolotrain::remote::RemoteFetch fetched =
      yolotrain::remote::fetch_latest_checkpoint(client, location, run_dir_, kSeries, local_step);
  for (const auto& s : fetched.skipped) {
    say_("resume: skipping " + s.path.string() + " (" + s.reason + "); trying the previous one");
  }
  if (!fetched.path) {
    if (!fetched.skipped.empty() && local_step < 0) {
      throw Error("resume: no usable checkpoint in " + location.url() + " (see above)");
    }
    return {};
  }
  say_("resume: downloaded " + location.url() + "/" + mirror_->remote_name(*fetched.path) + " (step " +
       std::to_string(fetched.step) + ") to " + fetched.path->string());
  try {
    yolotrain::remote::fetch_file(client, location, run_dir_, "weights/best.ytckpt");
  } catch (const Error& e) {
    say_("resume: WARNING best.ytckpt not downloaded (" + std::string(e.what()) + "); the final validation then "
         "uses the weights of the end of training");
  }
  return *fetched.path;
}

void RemoteRun::report_to(lc::RunStatus& status) {
  mirror_->set_listener([&status](const lc::RemoteUploadStatus& s) { status.set_remote(s); });
  status.set_remote(mirror_->status());
}

void RemoteRun::upload_run_files() {
  for (const char* name : {"results.csv", "args.yaml", "status.json"}) {
    if (fs::exists(run_dir_ / name)) mirror_->upload_file(run_dir_ / name);
  }
}

bool RemoteRun::finish(double timeout_s, const fs::path& last_checkpoint) {
  upload_run_files();
  const yolotrain::remote::RemoteFinish f = mirror_->finish(timeout_s);
  const std::string url = mirror_->location().url();
  if (f.complete) {
    say_("remote: every upload confirmed in " + url + " (newest checkpoint: step " +
         std::to_string(f.last_uploaded_step) + "; waited " + seconds_text(f.waited_s) + ")");
    return true;
  }
  std::string names;
  for (const auto& n : f.not_uploaded) names += (names.empty() ? "" : ", ") + n;
  say_("remote: WARNING the upload did not finish within remote_timeout=" + seconds_text(timeout_s) + ": " + names +
       " not in " + url + (f.last_error.empty() ? "" : " (last error: " + f.last_error + ")") +
       "; the bucket's newest checkpoint is step " + std::to_string(f.last_uploaded_step) + "; the local checkpoint " +
       last_checkpoint.string() + " is intact");
  return false;
}

}  // namespace yolotrain::engine::detail
