#pragma once

// An ONNX graph under construction, with PyTorch's exporter's naming: nodes "/model.2/cv1/conv/Conv",
// their outputs "<node>_output_0", weights under their state-dict names ("model.2.cv1.conv.weight").
// Private to the export part: the public API is onnx_export.hpp.

#include <onnx/onnx_pb.h>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace yolotrain::exporter::detail {

/// A node attribute: an integer, a float, a string or a list of integers.
struct Attribute {
  std::string name;
  std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>> value;
};

class OnnxGraph {
 public:
  explicit OnnxGraph(onnx::GraphProto& graph) : graph_(graph) {}

  /// Enters a module (`model.2`, `cv1`, ...) until the returned guard leaves it.
  class Scope {
   public:
    Scope(OnnxGraph& graph, const std::string& name) : graph_(graph) { graph_.scopes_.push_back(name); }
    ~Scope() { graph_.scopes_.pop_back(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OnnxGraph& graph_;
  };
  Scope scope(const std::string& name) { return Scope(*this, name); }

  /// Adds a node of `op` reading `inputs`; returns its output's name (`output` when given).
  std::string node(const std::string& op, const std::vector<std::string>& inputs,
                   const std::vector<Attribute>& attributes = {}, const std::string& output = "");
  /// A node with `n` outputs ("<node>_output_0", "_output_1", ...); returns their names.
  std::vector<std::string> node_outputs(const std::string& op, const std::vector<std::string>& inputs, int n,
                                        const std::vector<Attribute>& attributes = {});

  /// Adds `tensor` (float32 or int64, any layout) as the initializer `<scope>.<name>` (the
  /// state-dict name of a module's parameter); returns the name.
  std::string weight(const std::string& name, const at::Tensor& tensor);

  /// A constant (an initializer named after the scope), float32 or int64, of `dims`.
  std::string constant(const std::vector<float>& values, const std::vector<std::int64_t>& dims);
  std::string constant(const std::vector<std::int64_t>& values, const std::vector<std::int64_t>& dims);
  /// A constant from a tensor (float32 or int64).
  std::string constant(const at::Tensor& tensor);

 private:
  std::string unique(const std::string& base);
  std::string path(char separator) const;
  void add_initializer(const std::string& name, const at::Tensor& tensor);

  onnx::GraphProto& graph_;
  std::vector<std::string> scopes_;
  std::map<std::string, int> used_;
};

}  // namespace yolotrain::exporter::detail
