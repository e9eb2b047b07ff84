// MuSGD against Ultralytics 8.4.117's optim/muon.py: two steps on fixed parameters and gradients
// (scripts/ultralytics84_musgd.py ran it with Debian's python3-torch -> data/ultralytics84_musgd.json).
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "musgd.hpp"

#include "catch.hpp"

#include <filesystem>
#include <fstream>
#include <map>

namespace fs = std::filesystem;
using namespace yolotrain::engine;
using nlohmann::json;

namespace {

// The script's values: sin(0.37 i + k) / 10 in float64, stored as float32.
torch::Tensor values(const std::vector<int64_t>& shape, double k) {
  int64_t n = 1;
  for (const int64_t s : shape) n *= s;
  return (torch::sin(torch::arange(n, torch::kDouble) * 0.37 + k) * 0.1).to(torch::kFloat).reshape(shape);
}

}  // namespace

TEST_CASE("two MuSGD steps equal Ultralytics 8.4's on fixed gradients", "[engine][musgd]") {
  const json ref = json::parse(std::ifstream(fs::path(YOLOTRAIN_SOURCE_DIR) / "tests" / "unit" / "engine" / "data" /
                                             "ultralytics84_musgd.json"));
  const std::vector<std::string> names = {"conv1", "conv2", "linear", "tall", "bias", "bn"};  // the script's order
  const auto muon = ref["muon"].get<std::vector<std::string>>();
  std::map<std::string, torch::Tensor> params;
  std::vector<torch::Tensor> muon_params, sgd_params;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto shape = ref["shapes"][names[i]].get<std::vector<int64_t>>();
    params[names[i]] = values(shape, double(i)).requires_grad_(true);
    const bool is_muon = std::find(muon.begin(), muon.end(), names[i]) != muon.end();
    (is_muon ? muon_params : sgd_params).push_back(params[names[i]]);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(muon_params,
                      std::make_unique<MuSGDOptions>(
                          MuSGDOptions(0.03).momentum(0.9).nesterov(true).weight_decay(5e-4).use_muon(true)));
  groups.emplace_back(sgd_params, std::make_unique<MuSGDOptions>(MuSGDOptions(0.01).momentum(0.9).nesterov(true)));
  MuSGD opt(std::move(groups), 0.2, 1.0);
  for (int step = 0; step < 2; ++step) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      auto& p = params[names[i]];
      p.mutable_grad() = values(p.sizes().vec(), double(i) + 10.0 * (step + 1)) * double(step + 1);
    }
    opt.step();
    for (const auto& name : names) {
      const auto expected = ref["steps"][step][name].get<std::vector<float>>();
      const torch::Tensor want = torch::tensor(expected).reshape(params[name].sizes());
      const double diff = (params[name].detach() - want).abs().max().item<double>();
      INFO("step " << step + 1 << " " << name << " max difference " << diff);
      CHECK(diff <= 1e-5);
    }
  }
  // The Muon group's parameters moved by more than the SGD part alone would move them.
  CHECK(opt.state().size() == names.size());
}

TEST_CASE("Newton-Schulz orthogonalises: singular values near 1, shape and transposition kept", "[engine][musgd]") {
  torch::manual_seed(3);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{8, 20}, {20, 8}}) {
    const torch::Tensor g = torch::randn(shape);
    const torch::Tensor x = zeropower_via_newtonschulz5(g).to(torch::kFloat);
    CHECK(x.sizes() == g.sizes());
    const torch::Tensor s = at::linalg_svdvals(x);
    CHECK(s.min().item<double>() > 0.5);  // Muon's quintic: singular values ~ Uniform(0.5, 1.5)
    CHECK(s.max().item<double>() < 1.5);
  }
}
