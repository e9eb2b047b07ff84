#include "onnx_graph.hpp"

#include <ATen/ATen.h>

#include "yolotrain/error.hpp"

namespace yolotrain::exporter::detail {

std::string OnnxGraph::path(char separator) const {
  std::string p;
  for (const auto& s : scopes_) {
    if (!p.empty() || separator == '/') p += separator;
    p += s;
  }
  return p;
}

std::string OnnxGraph::unique(const std::string& base) {
  const int n = used_[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

std::vector<std::string> OnnxGraph::node_outputs(const std::string& op, const std::vector<std::string>& inputs,
                                                 int n, const std::vector<Attribute>& attributes) {
  const std::string first = node(op, inputs, attributes);
  onnx::NodeProto* added = graph_.mutable_node(graph_.node_size() - 1);
  std::vector<std::string> outs{first};
  for (int i = 1; i < n; ++i) {
    outs.push_back(added->name() + "_output_" + std::to_string(i));
    added->add_output(outs.back());
  }
  return outs;
}

std::string OnnxGraph::node(const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<Attribute>& attributes, const std::string& output) {
  onnx::NodeProto* n = graph_.add_node();
  n->set_name(unique(path('/') + "/" + op));
  n->set_op_type(op);
  for (const auto& in : inputs) n->add_input(in);
  const std::string out = output.empty() ? n->name() + "_output_0" : output;
  n->add_output(out);
  for (const auto& a : attributes) {
    onnx::AttributeProto* p = n->add_attribute();
    p->set_name(a.name);
    if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(*i);
    } else if (const auto* f = std::get_if<float>(&a.value)) {
      p->set_type(onnx::AttributeProto::FLOAT);
      p->set_f(*f);
    } else if (const auto* s = std::get_if<std::string>(&a.value)) {
      p->set_type(onnx::AttributeProto::STRING);
      p->set_s(*s);
    } else {
      p->set_type(onnx::AttributeProto::INTS);
      for (std::int64_t v : std::get<std::vector<std::int64_t>>(a.value)) p->add_ints(v);
    }
  }
  return out;
}

void OnnxGraph::add_initializer(const std::string& name, const at::Tensor& tensor) {
  const at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
  onnx::TensorProto* p = graph_.add_initializer();
  p->set_name(name);
  for (std::int64_t d : t.sizes()) p->add_dims(d);
  if (t.scalar_type() == at::kFloat) {
    p->set_data_type(onnx::TensorProto::FLOAT);
  } else if (t.scalar_type() == at::kLong) {
    p->set_data_type(onnx::TensorProto::INT64);
  } else {
    throw Error("ONNX export: tensor " + name + " is " + std::string(c10::toString(t.scalar_type())) +
                "; only float32 and int64 are written");
  }
  // raw_data is little-endian, as the tensors of x86-64 and ARM64 are in memory.
  p->set_raw_data(std::string(static_cast<const char*>(t.data_ptr()), t.nbytes()));
}

std::string OnnxGraph::weight(const std::string& name, const at::Tensor& tensor) {
  const std::string full = path('.') + "." + name;
  add_initializer(full, tensor.to(at::kFloat));
  return full;
}

std::string OnnxGraph::constant(const at::Tensor& tensor) {
  const std::string name = unique(path('/') + "/Constant") + "_output_0";
  add_initializer(name, tensor);
  return name;
}

std::string OnnxGraph::constant(const std::vector<float>& values, const std::vector<std::int64_t>& dims) {
  return constant(at::tensor(values, at::kFloat).view(dims));
}

std::string OnnxGraph::constant(const std::vector<std::int64_t>& values, const std::vector<std::int64_t>& dims) {
  return constant(at::tensor(values, at::kLong).view(dims));
}

}  // namespace yolotrain::exporter::detail
