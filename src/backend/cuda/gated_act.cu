#include "backend/cuda/activation.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gated_act.h"

namespace seam::cuda {

namespace {

// Grid-stride over (row, vector) items; V elements per item (16-byte vectors when aligned).
// Each item reads its gate and up values before writing: out may alias gate (in place).
template <typename T, int V, Activation A>
__global__ void gated_act_kernel(T* out, int64_t out_stride, const T* gate_up, int64_t gu_stride, int64_t n_rows,
                                 int inter) {
  pdl_begin();
  const int per_row = inter / V;
  const int64_t n_items = n_rows * per_row;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n_items;
       it += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = it / per_row;
    const int j = int(it % per_row) * V;
    const T* g = gate_up + r * gu_stride + j;
    float gv[V], uv[V];
    if constexpr (V == 1) {
      gv[0] = to_float(g[0]);
      uv[0] = to_float(g[inter]);
    } else {
      load_vec<T>(g, gv);
      load_vec<T>(g + inter, uv);
    }
#pragma unroll
    for (int i = 0; i < V; ++i) gv[i] = activate<A>(gv[i]) * uv[i];
    if constexpr (V == 1)
      out[r * out_stride + j] = from_float<T>(gv[0]);
    else
      store_vec<T>(out + r * out_stride + j, gv);
  }
}

template <typename T, Activation A>
void launch_typed(const Tensor& out, const Tensor& gate_up, cudaStream_t stream) {
  const int64_t n = out.size(0);
  const int inter = int(out.size(1));
  const bool vec = rows_vectorizable(out, inter) && rows_vectorizable(gate_up, 2 * int64_t(inter));
  const int v = vec ? kVec<T> : 1;
  const unsigned blocks = unsigned(std::min<int64_t>(div_up(n * inter / v, 256), 132 * 16));
  if (vec)
    launch_kernel(gated_act_kernel<T, kVec<T>, A>, blocks, 256, 0, stream, out.ptr<T>(), out.stride[0],
                  gate_up.ptr<T>(), gate_up.stride[0], n, inter);
  else
    launch_kernel(gated_act_kernel<T, 1, A>, blocks, 256, 0, stream, out.ptr<T>(), out.stride[0], gate_up.ptr<T>(),
                  gate_up.stride[0], n, inter);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_gated_act(const Tensor& out, const Tensor& gate_up, Activation a, cudaStream_t stream) {
  if (out.size(0) == 0 || out.size(1) == 0) return;
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "gated_act", [&] {
    if (a == Activation::silu)
      launch_typed<T, Activation::silu>(out, gate_up, stream);
    else
      launch_typed<T, Activation::gelu_tanh>(out, gate_up, stream);
  });
}

}  // namespace seam::cuda
