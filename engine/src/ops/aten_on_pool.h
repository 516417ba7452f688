// ATen's element-wise and row-wise CPU operators, run in fixed chunks on our pool's threads.
//
// Why: where the products run on our pool, ATen gets one thread (engine/compute_threads.h), so
// its activations, layer norms and residual adds ran on the engine thread alone while the pool's
// other threads waited. On the 2-core Zen 4, W3 in int8 (BLOOM shape) spent 0.3 s of CPU in
// GELU's tanh alone, and panel products were 0.95x oneDNN's tokens/s though the products took the
// same CPU time (docs/benchmarks.md, issue 28).
//
// Results are those of one ATen call over the whole tensor, whatever the thread count: the chunks
// are fixed, element-wise ones start at multiples of 64 elements (ATen's vector loop then covers
// the same elements, and its scalar tail is the same tail), row-wise ones take whole rows (a layer
// norm computes each row alone).
#pragma once

#include <ATen/ATen.h>

#include <functional>

namespace lorascope::ops {

// True when the helpers below split `x`: a contiguous float32 CPU tensor large enough to share.
bool worth_sharing(const at::Tensor& x);

// out = op(in) element by element (op writes every element of its `out` chunk): x's shape, x's
// options. `op` runs once per chunk, on any pool thread.
at::Tensor map_elements(const at::Tensor& x, const std::function<void(at::Tensor& out, const at::Tensor& in)>& op);

// a + b for two contiguous tensors of one shape and dtype.
at::Tensor add_on_pool(const at::Tensor& a, const at::Tensor& b);

// at::layer_norm over the last dimension.
at::Tensor layer_norm_on_pool(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps);

}  // namespace lorascope::ops
