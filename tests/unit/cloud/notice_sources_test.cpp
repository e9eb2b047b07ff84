// The three clouds' notice sources against a fake metadata server on 127.0.0.1 that answers (and
// refuses) as each cloud documents; the cloud from DMI strings; the watcher's thread.
#include "yolotrain/cloud.hpp"

#include "catch.hpp"

#include <fstream>
#include <thread>

#include "fake_metadata_server.hpp"
#include "test_support.hpp"

namespace cloud = yolotrain::cloud;
namespace yt = yolotrain::test;
using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

namespace {

Clock::time_point utc(int y, int mo, int d, int h, int mi, int s) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return Clock::from_time_t(timegm(&tm));
}

void write_dmi(const std::filesystem::path& dir, const std::map<std::string, std::string>& files) {
  std::filesystem::create_directories(dir);
  for (const auto& [name, text] : files) std::ofstream(dir / name) << text << "\n";
}

}  // namespace

TEST_CASE("AWS: no notice is a 404, a spot interruption notice gives its action and time", "[cloud]") {
  yt::FakeMetadataServer meta;
  yt::ScopedEnv env({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", meta.url()}, {"AWS_EC2_METADATA_DISABLED", std::nullopt}});
  auto aws = cloud::make_notice_source(cloud::Cloud::Aws);
  CHECK(aws->endpoint() == meta.url());
  CHECK_FALSE(aws->poll());
  meta.set_aws_notice("terminate", "2026-12-06T17:00:00Z");
  const auto n = aws->poll();
  REQUIRE(n);
  CHECK(n->cloud == cloud::Cloud::Aws);
  CHECK(n->kind == cloud::NoticeKind::Reclaim);
  CHECK(n->event == "spot/instance-action terminate");
  CHECK(n->deadline == utc(2026, 12, 6, 17, 0, 0));
  CHECK(n->deadline_source == "the notice's time");
  CHECK(meta.count("PUT /latest/api/token") == 1);  // IMDSv2: one session token, reused
  CHECK(meta.count("GET /latest/meta-data/spot/instance-action") == 2);
}

TEST_CASE("AWS: AWS_EC2_METADATA_DISABLED=true refuses the source and says what to do", "[cloud]") {
  yt::ScopedEnv env(
      {{"AWS_EC2_METADATA_DISABLED", "true"}, {"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9"}});
  try {
    cloud::make_notice_source(cloud::Cloud::Aws);
    FAIL("no error");
  } catch (const yolotrain::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("AWS_EC2_METADATA_DISABLED=true"));
    CHECK_THAT(e.what(), Catch::Contains("preemption=off"));
  }
}

TEST_CASE("GCE: preempted TRUE gives 30 s from when it was first read, maintenance uses its window", "[cloud]") {
  yt::FakeMetadataServer meta;
  yt::ScopedEnv env({{"GCE_METADATA_HOST", meta.host()}});
  auto gcp = cloud::make_notice_source(cloud::Cloud::Gcp);
  CHECK(gcp->endpoint() == meta.url());
  CHECK_FALSE(gcp->poll());
  meta.set_gcp_maintenance("MIGRATE_ON_HOST_MAINTENANCE");
  CHECK_FALSE(gcp->poll());  // a live migration loses nothing
  meta.set_gcp_maintenance("TERMINATE_ON_HOST_MAINTENANCE", "2026-12-06T18:00:00.000-01:00");
  auto m = gcp->poll();
  REQUIRE(m);
  CHECK(m->kind == cloud::NoticeKind::Maintenance);
  CHECK(m->event == "instance/maintenance-event TERMINATE_ON_HOST_MAINTENANCE");
  CHECK(m->deadline == utc(2026, 12, 6, 19, 0, 0));
  meta.set_gcp_maintenance("TERMINATE_ON_HOST_MAINTENANCE");  // no window: the key's documented 60 s
  m = gcp->poll();
  REQUIRE(m);
  CHECK(m->deadline == m->seen + 60s);
  meta.set_gcp_preempted(true);
  const auto first = gcp->poll();
  std::this_thread::sleep_for(20ms);
  const auto again = gcp->poll();
  REQUIRE(first);
  REQUIRE(again);
  CHECK(first->event == "instance/preempted");
  CHECK(first->kind == cloud::NoticeKind::Reclaim);
  CHECK(first->deadline == first->seen + 30s);
  CHECK(again->deadline == first->deadline);  // not 30 s from each read
  for (const auto& r : meta.requests()) CHECK(r.rfind("GET /computeMetadata/v1/instance/", 0) == 0);
}

TEST_CASE("Azure: this VM's Preempt event with its NotBefore, other VMs' and Freeze events are none", "[cloud]") {
  yt::FakeMetadataServer meta;
  yt::ScopedEnv env({{"YOLOTRAIN_AZURE_IMDS_ENDPOINT", meta.url()}});
  auto azure = cloud::make_notice_source(cloud::Cloud::Azure);
  CHECK_FALSE(azure->poll());
  const auto event = [](const std::string& id, const std::string& type, const std::string& vm) {
    return nlohmann::json{{"EventId", id}, {"EventType", type}, {"ResourceType", "VirtualMachine"},
                          {"Resources", {vm}}, {"EventStatus", "Scheduled"},
                          {"NotBefore", "Sun, 06 Dec 2026 17:00:30 GMT"}, {"Description", ""},
                          {"EventSource", "Platform"}, {"DurationInSeconds", -1}};
  };
  meta.set_azure_events(
      nlohmann::json::array({event("F-1", "Freeze", "yolo-vm"), event("P-2", "Preempt", "other-vm")}));
  CHECK_FALSE(azure->poll());
  meta.set_azure_events(nlohmann::json::array({event("P-3", "Preempt", "yolo-vm")}));
  const auto n = azure->poll();
  REQUIRE(n);
  CHECK(n->event == "Preempt");
  CHECK(n->id == "P-3");
  CHECK(n->deadline == utc(2026, 12, 6, 17, 0, 30));
  azure->acknowledge(*n);
  CHECK(meta.azure_acknowledged() == std::vector<std::string>{"P-3"});
  CHECK(meta.count("GET /metadata/instance/compute/name") == 1);
}

TEST_CASE("a metadata server that cannot be reached is a NoticeError naming the request", "[cloud]") {
  const int port = yt::free_port();  // nothing listens there
  auto gcp = cloud::make_notice_source(cloud::Cloud::Gcp, "http://127.0.0.1:" + std::to_string(port));
  try {
    gcp->poll();
    FAIL("no error");
  } catch (const cloud::NoticeError& e) {
    CHECK_THAT(e.what(), Catch::Contains("GET http://127.0.0.1:" + std::to_string(port) +
                                                    "/computeMetadata/v1/instance/preempted"));
  }
}

TEST_CASE("the cloud comes from the DMI strings, and an unknown or missing folder names none", "[cloud]") {
  yt::TempDir tmp;
  write_dmi(tmp / "aws", {{"sys_vendor", "Amazon EC2"}, {"product_name", "g5.xlarge"}});
  write_dmi(tmp / "aws-xen", {{"sys_vendor", "Xen"}, {"bios_version", "4.11.amazon"}});
  write_dmi(tmp / "gcp", {{"sys_vendor", "Google"}, {"product_name", "Google Compute Engine"}});
  write_dmi(tmp / "azure", {{"sys_vendor", "Microsoft Corporation"}, {"chassis_asset_tag", "7783-7084-3265-9085"}});
  write_dmi(tmp / "hyperv", {{"sys_vendor", "Microsoft Corporation"}, {"chassis_asset_tag", "None"}});
  write_dmi(tmp / "laptop", {{"sys_vendor", "LENOVO"}, {"product_name", "20XW0026GE"}});
  CHECK(cloud::detect_cloud(tmp / "aws") == cloud::Cloud::Aws);
  CHECK(cloud::detect_cloud(tmp / "aws-xen") == cloud::Cloud::Aws);
  CHECK(cloud::detect_cloud(tmp / "gcp") == cloud::Cloud::Gcp);
  CHECK(cloud::detect_cloud(tmp / "azure") == cloud::Cloud::Azure);
  CHECK(cloud::detect_cloud(tmp / "hyperv") == cloud::Cloud::None);  // Hyper-V outside Azure
  CHECK(cloud::detect_cloud(tmp / "laptop") == cloud::Cloud::None);
  CHECK(cloud::detect_cloud(tmp / "missing") == cloud::Cloud::None);
  yt::ScopedEnv env({{"YOLOTRAIN_DMI_DIR", (tmp / "gcp").string()}});
  CHECK(cloud::dmi_folder() == tmp / "gcp");
  CHECK(cloud::detect_cloud() == cloud::Cloud::Gcp);
}

TEST_CASE("the watcher calls on_notice once per notice and says an unreachable server once", "[cloud]") {
  yt::FakeMetadataServer meta;
  std::mutex m;
  std::vector<std::string> notices, problems;
  cloud::NoticeWatcherOptions o;
  o.interval = 10ms;
  o.on_notice = [&](const cloud::Notice& n) {
    std::lock_guard<std::mutex> lock(m);
    notices.push_back(n.event);
  };
  o.on_problem = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(m);
    problems.push_back(why);
  };
  cloud::NoticeWatcher watcher(cloud::make_notice_source(cloud::Cloud::Aws, meta.url()), o);
  REQUIRE(yt::wait_until([&] { return watcher.polls() >= 3; }, 10s));
  CHECK_FALSE(watcher.notice());
  meta.set_aws_notice("stop", "2026-12-06T17:00:00Z");
  REQUIRE(yt::wait_until([&] { return watcher.notice().has_value(); }, 10s));
  const auto polled = watcher.polls();
  REQUIRE(yt::wait_until([&] { return watcher.polls() >= polled + 3; }, 10s));
  watcher.stop();
  CHECK(notices == std::vector<std::string>{"spot/instance-action stop"});
  CHECK(problems.empty());

  const int port = yt::free_port();
  const std::string nowhere = "http://127.0.0.1:" + std::to_string(port);
  cloud::NoticeWatcher lost(cloud::make_notice_source(cloud::Cloud::Aws, nowhere), o);
  REQUIRE(yt::wait_until([&] { return lost.polls() >= 4; }, 20s));
  lost.stop();
  std::lock_guard<std::mutex> lock(m);
  REQUIRE(problems.size() == 1);  // said once, not at every poll
  CHECK_THAT(problems[0], Catch::Contains("PUT http://127.0.0.1:" + std::to_string(port) + "/latest/api/token"));
}
