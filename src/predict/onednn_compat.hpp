#pragma once
// What differs between the oneDNN versions the CPU forward builds against — Debian 12's 2.6 and
// Debian 13's 3.7 — in one place, so the plan's code is written once. oneDNN 3 removed the
// operation descriptors (a primitive descriptor is made directly from the engine and the shapes),
// renamed memory::desc::dims() to get_dims(), and dropped append_eltwise's scale argument.
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_version.h>

#include <vector>

namespace yolotrain::predict::detail::onednn_compat {

namespace dn = dnnl;
using dims = dn::memory::dims;

inline dims dims_of(const dn::memory::desc& md) {
#if DNNL_VERSION_MAJOR >= 3
  return md.get_dims();
#else
  return md.dims();
#endif
}

/// SiLU (oneDNN's swish with alpha 1) as a post-op.
inline void append_silu(dn::post_ops& ops) {
#if DNNL_VERSION_MAJOR >= 3
  ops.append_eltwise(dn::algorithm::eltwise_swish, 1.f, 0.f);
#else
  ops.append_eltwise(1.f, dn::algorithm::eltwise_swish, 1.f, 0.f);
#endif
}

/// A direct convolution for inference, symmetric stride and padding.
inline dn::convolution_forward::primitive_desc convolution(const dn::engine& engine, const dn::memory::desc& src,
                                                           const dn::memory::desc& weights,
                                                           const dn::memory::desc& bias, const dn::memory::desc& dst,
                                                           int64_t stride, int64_t pad,
                                                           const dn::primitive_attr& attr = {}) {
  const auto inference = dn::prop_kind::forward_inference;
  const auto direct = dn::algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
  return {engine, inference, direct, src, weights, bias, dst, {stride, stride}, {pad, pad}, {pad, pad}, attr};
#else
  const dn::convolution_forward::desc d(inference, direct, src, weights, bias, dst, {stride, stride}, {pad, pad},
                                        {pad, pad});
  return {d, attr, engine};
#endif
}

/// A max pool for inference, square kernel, symmetric stride and padding, no dilation.
inline dn::pooling_forward::primitive_desc max_pool(const dn::engine& engine, const dn::memory::desc& src,
                                                    const dn::memory::desc& dst, int64_t kernel, int64_t stride,
                                                    int64_t pad) {
  const auto inference = dn::prop_kind::forward_inference;
#if DNNL_VERSION_MAJOR >= 3
  return {engine, inference, dn::algorithm::pooling_max, src, dst, {stride, stride}, {kernel, kernel}, {0, 0},
          {pad, pad}, {pad, pad}};
#else
  const dn::pooling_forward::desc d(inference, dn::algorithm::pooling_max, src, dst, {stride, stride},
                                    {kernel, kernel}, {pad, pad}, {pad, pad});
  return {d, engine};
#endif
}

/// A nearest-neighbour resampling for inference, the factor given by the shapes.
inline dn::resampling_forward::primitive_desc nearest(const dn::engine& engine, const dn::memory::desc& src,
                                                      const dn::memory::desc& dst) {
  const auto inference = dn::prop_kind::forward_inference;
#if DNNL_VERSION_MAJOR >= 3
  return {engine, inference, dn::algorithm::resampling_nearest, src, dst};
#else
  const dn::resampling_forward::desc d(inference, dn::algorithm::resampling_nearest, src, dst);
  return {d, engine};
#endif
}

/// The concatenation of `srcs` along `axis` into `dst`.
inline dn::concat::primitive_desc concat(const dn::engine& engine, const dn::memory::desc& dst, int axis,
                                         const std::vector<dn::memory::desc>& srcs) {
#if DNNL_VERSION_MAJOR >= 3
  return {engine, dst, axis, srcs};
#else
  return {dst, axis, srcs, engine};
#endif
}

}  // namespace yolotrain::predict::detail::onednn_compat
