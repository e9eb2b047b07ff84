#include "preemption_run.hpp"

#include <cmath>
#include <ctime>

#include "run_log.hpp"
#include "yolotrain/cloud/cloud_detect.hpp"

namespace yolotrain::engine::detail {
namespace {

using SystemClock = std::chrono::system_clock;

double unix_of(SystemClock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }
double unix_now() { return unix_of(SystemClock::now()); }

// "17:00:00 UTC".
std::string clock_text(double unix_s) {
  const auto t = static_cast<std::time_t>(std::floor(unix_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%H:%M:%S UTC", &tm);
  return out;
}

// When to stop (Unix seconds): the deadline less the time to a safe exit and the margin; 0 when the
// run finishes before that — unless a stop is planned already (`planned`): a plan is never dropped
// for a pace that picked up, so that it cannot flip back and forth.
double planned_stop(const cloud::Notice& n, double safe_exit_s, double eta_s, bool planned = false) {
  const double stop_at = unix_of(n.deadline) - safe_exit_s - preemption_margin(safe_exit_s);
  return !planned && unix_now() + eta_s < stop_at ? 0.0 : stop_at;
}

}  // namespace

double preemption_margin(double safe_exit_s) { return 2.0 + 0.25 * safe_exit_s; }

PreemptionRun::PreemptionRun(const TrainConfig& cfg, const RankGroup& ranks, lifecycle::ControlToken& token, Say say)
    : token_(token), say_(std::move(say)) {
  if (cfg.preemption == "off" || ranks.local_rank() != 0) return;  // one process per machine polls
  cloud::Cloud which = cloud::Cloud::None;
  std::string why;
  if (cfg.preemption == "auto") {
    which = cloud::detect_cloud();
    if (which == cloud::Cloud::None) {
      say_("preemption: auto: the DMI strings in " + cloud::dmi_folder().string() +
           " name no cloud yolotrain knows (AWS, GCE, Azure): not polling (preemption=aws|gcp|azure polls anyway)");
      return;
    }
    why = " (auto: " + cloud::dmi_folder().string() + " names it)";
  } else {
    which = cloud::parse_cloud(cfg.preemption);
  }
  auto source = cloud::make_notice_source(which);
  const std::string endpoint = source->endpoint();
  cloud::NoticeWatcherOptions o;
  o.interval = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.preemption_interval * 1000));
  watcher_ = std::make_unique<cloud::NoticeWatcher>(std::move(source), o);
  say_(std::string("preemption: watching ") + cloud::to_string(which) + "'s notices at " + endpoint + " every " +
       seconds_text(cfg.preemption_interval) + why);
}

PreemptionRun::~PreemptionRun() {
  if (watcher_) watcher_->stop();
}

void PreemptionRun::poll(double safe_exit_s, double eta_s, lifecycle::RunStatus& status) {
  if (!watcher_ || stop_requested_) return;
  const auto n = watcher_->notice();
  if (n && (!notice_ || n->event != notice_->event || n->deadline != notice_->deadline || n->id != notice_->id)) {
    announce(*n, safe_exit_s, eta_s, status);
  } else if (notice_) {
    replan(safe_exit_s, eta_s, status);
  }
  if (!notice_ || planned_stop_ == 0 || unix_now() < planned_stop_) return;
  stop_requested_ = true;
  token_.request_stop(lifecycle::StopReason::Preemption);
  say_("preemption: stopping with a checkpoint, " + seconds_text(unix_of(notice_->deadline) - unix_now()) +
       " before the deadline");
}

void PreemptionRun::announce(const cloud::Notice& n, double safe_exit_s, double eta_s,
                             lifecycle::RunStatus& status) {
  notice_ = n;
  planned_stop_ = planned_stop(n, safe_exit_s, eta_s, planned_stop_ != 0);
  const bool reclaim = n.kind == cloud::NoticeKind::Reclaim;
  const double now = unix_now(), deadline = unix_of(n.deadline);
  std::string line = std::string("preemption: ") + cloud::to_string(n.cloud) + ": " + n.event + ": the machine " +
                     (reclaim ? "goes" : "goes down for maintenance") + " at " + clock_text(deadline) + ", in " +
                     seconds_text(deadline - now) + " (" + n.deadline_source + ")";
  const std::string exit_text = "a safe exit takes " + seconds_text(safe_exit_s) + " + " +
                                 seconds_text(preemption_margin(safe_exit_s)) + " margin";
  if (planned_stop_ == 0) {
    line += "; the run finishes first (about " + seconds_text(eta_s) + " left): no stop planned";
  } else if (planned_stop_ <= now) {
    line += "; too little time (" + exit_text + "): stopping now with a checkpoint (exit 75: resume it)";
  } else {
    line += "; training goes on until " + clock_text(planned_stop_) + " (" + exit_text +
            "), then stops with a checkpoint (exit 75: resume it)";
  }
  if (!checkpoint_asked_ && (reclaim || planned_stop_ != 0)) {
    ask_checkpoint();
    line += "; a checkpoint now";
  }
  say_(line);
  record(status);
  status.note_request(std::string("preemption notice: ") + cloud::to_string(n.cloud) + " " + n.event);
}

// The plan follows the measurements: the notice's own checkpoint may show a slower write than the
// run had seen, a slower pace may mean the run no longer finishes first.
void PreemptionRun::replan(double safe_exit_s, double eta_s, lifecycle::RunStatus& status) {
  const double planned = planned_stop(*notice_, safe_exit_s, eta_s, planned_stop_ != 0);
  const bool newly_planned = planned != 0 && planned_stop_ == 0;
  if (!newly_planned && std::abs(planned - planned_stop_) < 1.0) return;
  planned_stop_ = planned;
  if (newly_planned) {
    say_("preemption: the run would not finish first: it stops with a checkpoint at " + clock_text(planned) + " (" +
         seconds_text(safe_exit_s) + " to a safe exit)");
  }
  if (planned != 0 && !checkpoint_asked_) ask_checkpoint();
  record(status);
}

void PreemptionRun::record(lifecycle::RunStatus& status) const {
  const bool reclaim = notice_->kind == cloud::NoticeKind::Reclaim;
  status.set_notice({cloud::to_string(notice_->cloud), notice_->event, reclaim ? "reclaim" : "maintenance",
                     unix_of(notice_->seen), unix_of(notice_->deadline), planned_stop_});
}

void PreemptionRun::ask_checkpoint() {
  token_.request_checkpoint();
  awaiting_checkpoint_ = checkpoint_asked_ = true;
}

void PreemptionRun::saved(std::int64_t step, double wall_time) {
  if (!awaiting_checkpoint_ || !notice_) return;
  awaiting_checkpoint_ = false;
  const double after = wall_time - unix_of(notice_->seen);
  say_(after < 0 ? "preemption: the checkpoint of step " + std::to_string(step) + " was written before the notice"
                 : "preemption: checkpoint at step " + std::to_string(step) + " written " +
                       seconds_text(unix_now() - unix_of(notice_->seen)) + " after the notice");
}

std::string PreemptionRun::stop_reason() const {
  if (!notice_) return "preemption";
  return std::string("preemption: ") + cloud::to_string(notice_->cloud) + " " + notice_->event +
         ", the machine goes at " + clock_text(unix_of(notice_->deadline));
}

void PreemptionRun::finish(bool stopped) {
  if (!watcher_) return;
  watcher_->stop();
  if (!notice_) return;
  const double now = unix_now();
  if (stopped) {
    say_("preemption: safe to take " + seconds_text(now - unix_of(notice_->seen)) + " after the notice, " +
         seconds_text(unix_of(notice_->deadline) - now) + " before the deadline");
  }
  if (!stopped || notice_->cloud != cloud::Cloud::Azure) return;
  const std::string error = watcher_->acknowledge();
  say_(error.empty() ? "preemption: azure: event " + notice_->id + " acknowledged (the machine may be taken now)"
                     : "preemption: azure: the acknowledgement failed: " + error + " (Azure goes on at NotBefore)");
}

}  // namespace yolotrain::engine::detail
