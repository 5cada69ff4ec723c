// The warp-specialised FP8 GEMM's launchers (fp8_gemm_wgmma_ws.h): which instantiation of the
// kernel (fp8_gemm_wgmma_ws_kernel.cuh: its structure, barriers and numerics) runs, its tensor
// maps, grid and clusters.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma_ws.h"
#include "backend/cuda/fp8_gemm_wgmma_ws_kernel.cuh"
#include "backend/cuda/tma.cuh"

namespace seam::cuda {

namespace {

using namespace fp8_ws_detail;  // the kernel, its tiling and thread counts

// The kernel's accumulate argument for out += product: 2 (the old values prefetched a column
// block at a time, the default) or 1 (SEAM_FP8_WS_RESIDUAL_PREFETCH=0: loaded pair by pair).
int residual_prefetch() {
  static const int mode = env_choice("SEAM_FP8_WS_RESIDUAL_PREFETCH", 1, {0, 1}) == 1 ? 2 : 1;
  return mode;
}

template <typename T, bool BLOCK, int SUB_N, bool FAST, int GLU = 0>
void launch_typed(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                  const Tensor& bias, bool accumulate, cudaStream_t stream, int n_cta = 1) {
  using Tl = WsTiling<SUB_N>;
  auto* kernel = fp8_gemm_wgmma_ws_kernel<T, BLOCK, SUB_N, FAST, GLU>;
  once_per_device(reinterpret_cast<const void*>(kernel), [kernel] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
  });
  SEAM_CHECK(n_cta == 1 || (n_cta == 2 && SUB_N == 2), "fp8 gemm (wgmma, warp-specialised): clusters of ", n_cta,
             " CTAs need 128 x 256 tiles");
  // Persistent: one block an SM (its shared memory allows no second), at most one a tile; with
  // clusters of two, as many clusters as fit at once (a cluster's CTAs share a GPC, so this can
  // be below half the SMs), queried once per instantiation (host only).
  int64_t max_groups = current_device_sms();
  if (n_cta == 2) {
    static const int max_pairs = [kernel] {
      cudaLaunchConfig_t c = {};
      cudaLaunchAttribute a[1];
      a[0].id = cudaLaunchAttributeClusterDimension;
      a[0].val.clusterDim.x = 2;
      a[0].val.clusterDim.y = a[0].val.clusterDim.z = 1;
      c.gridDim = dim3(2);
      c.blockDim = dim3(kThreads);
      c.dynamicSmemBytes = Tl::kSmemBytes;
      c.attrs = a;
      c.numAttrs = 1;
      int n_clusters = 0;
      SEAM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n_clusters, kernel, &c));
      SEAM_CHECK(n_clusters > 0, "fp8 gemm (wgmma, warp-specialised): no cluster of 2 CTAs fits");
      return n_clusters;
    }();
    max_groups = max_pairs;
  }
  const int64_t n = out.size(0), w_rows = w.w.size(0), n_out = GLU ? w_rows / 2 : w_rows, n_in = w.w.size(1);
  const int tile_out = GLU ? Tl::kSubN : Tl::kBN;
  // Encoded per launch (about a microsecond of host time): the maps hold the codes' addresses, and
  // a captured launch keeps its own copy of them. The weight's boxes are 128 rows where a stage
  // takes its column blocks in two copies (GLU: gate and up; a cluster: one a CTA).
  const CUtensorMap map_x = tma::encode_u8_sw128(codes.data, uint64_t(n), uint64_t(n_in), uint64_t(n_in), Tl::kBM);
  const uint32_t w_box = GLU != 0 || n_cta == 2 ? uint32_t(Tl::kSubN) : uint32_t(Tl::kBN);
  const CUtensorMap map_w = tma::encode_u8_sw128(w.w.data, uint64_t(w_rows), uint64_t(n_in), uint64_t(n_in), w_box);
  const int64_t n_tiles = int64_t(div_up(div_up(n, Tl::kBM), n_cta)) * div_up(n_out, tile_out);  // (pairs)
  const dim3 grid(unsigned(n_cta * std::min<int64_t>(n_tiles, max_groups)));
  const int ws_step = w.w_scheme == Fp8WeightScheme::per_tensor ? 0 : 1;
  launch_kernel_clusters(unsigned(n_cta), kernel, grid, dim3(kThreads), Tl::kSmemBytes, stream, map_x, map_w,
                         out.ptr<T>(), out.stride[0], act_scales.ptr<const float>(), w.w_scale.ptr<const float>(),
                         ws_step, bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), int(n),
                         int(n_out), int(n_in), accumulate ? residual_prefetch() : 0, n_cta);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, bool BLOCK, bool FAST>
void launch_wide(int tile_cols, const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                 const Tensor& bias, bool accumulate, cudaStream_t stream, int n_cta) {
  if (tile_cols == 256)
    return launch_typed<T, BLOCK, 2, FAST>(out, codes, act_scales, w, bias, accumulate, stream, n_cta);
  launch_typed<T, BLOCK, 1, FAST>(out, codes, act_scales, w, bias, accumulate, stream);
}

// The cluster size a launch takes: `cluster` (1 or 2), or 0 the SEAM_FP8_WS_CLUSTER switch; 128-wide
// tiles always run alone.
int cluster_ctas(int cluster, int tile_cols) {
  static const int from_env = env_choice("SEAM_FP8_WS_CLUSTER", 2, {1, 2});
  SEAM_CHECK(cluster >= 0 && cluster <= 2, "fp8 gemm (wgmma, warp-specialised): cluster must be 0, 1 or 2, got ",
             cluster);
  return tile_cols == 256 ? (cluster == 0 ? from_env : cluster) : 1;
}

// The kernel reads act_scales as the scheme's scales of n rows: one a row, or (128-block weights)
// one a row for every 128-wide K group ([n_in / 128, n]).
void check_act_scales(const Tensor& act_scales, const Fp8Weight& w, int64_t n, const char* what) {
  const bool block = w.w_scheme == Fp8WeightScheme::block128;
  SEAM_CHECK(act_scales.numel() == (block ? w.w.size(1) / kFp8Group : 1) * n, what, ": act_scales ",
             act_scales.shape_str(), " do not match ", n, " rows of the ", fp8_weight_scheme_name(w.w_scheme),
             " scheme");
}

}  // namespace

bool fp8_gemm_wgmma_ws_applies(const Tensor& out, const Tensor& codes, const Fp8Weight& w) {
  // fp8_gemm_wgmma_applies bounds n by INT_MAX / 2 and K by INT_MAX (the TMA coordinates are int,
  // the dimensions below 2^32) and the grid's y by N / 32 <= 65,535.
  // The kernel counts its tiles (128 x 128 at most) in int.
  return fp8_gemm_wgmma_applies(out, codes, w) &&
         int64_t(div_up(codes.size(0), 128)) * div_up(w.w.size(0), 128) <= INT_MAX && tma::encode_tiled_fn() != nullptr;
}

int fp8_gemm_wgmma_ws_tile_cols(int tile_cols) {
  // SEAM_FP8_WS_TILE_N: the outputs of a tile, 256 (default) or 128 (an A/B of the two tiles).
  static const int from_env = env_choice("SEAM_FP8_WS_TILE_N", 256, {128, 256});
  SEAM_CHECK(tile_cols == 0 || tile_cols == 128 || tile_cols == 256,
             "fp8 gemm (wgmma, warp-specialised): tile_cols must be 0, 128 or 256, got ", tile_cols);
  return tile_cols == 0 ? from_env : tile_cols;
}

Fp8WsAccum fp8_gemm_wgmma_ws_accum(Fp8WsAccum accum) {
  // SEAM_FP8_ACCUM: fast (default) or promoted (see the header).
  static const Fp8WsAccum from_env =
      env_name_choice("SEAM_FP8_ACCUM", 0, {"fast", "promoted"}) == 0 ? Fp8WsAccum::fast : Fp8WsAccum::promoted;
  return accum == Fp8WsAccum::by_switch ? from_env : accum;
}

void launch_fp8_gemm_wgmma_ws(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                              const Tensor& bias, bool accumulate, cudaStream_t stream, int tile_cols,
                              Fp8WsAccum accum, int cluster) {
  SEAM_CHECK(fp8_gemm_wgmma_ws_applies(out, codes, w), "fp8 gemm (wgmma, warp-specialised): not available for out ",
             out.shape_str(), " codes ", codes.shape_str(), " w ", w.w.shape_str(),
             " (needs an sm_90a build, a CC 9.0 GPU, the driver's TMA encoder, K % 128 == 0, N % 8 == 0, contiguous "
             "aligned codes)");
  const int cols = fp8_gemm_wgmma_ws_tile_cols(tile_cols);
  const int n_cta = cluster_ctas(cluster, cols);
  const int64_t n = out.size(0);
  if (n == 0) return;
  const bool block = w.w_scheme == Fp8WeightScheme::block128;
  const bool fast = fp8_gemm_wgmma_ws_accum(accum) == Fp8WsAccum::fast;
  check_act_scales(act_scales, w, n, "fp8 gemm (wgmma, warp-specialised)");
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "fp8 gemm (wgmma, warp-specialised)", [&] {
    // Block-scaled weights change scale every 128 k: their partials are always promoted.
    if (block) return launch_wide<T, true, false>(cols, out, codes, act_scales, w, bias, accumulate, stream, n_cta);
    if (fast) return launch_wide<T, false, true>(cols, out, codes, act_scales, w, bias, accumulate, stream, n_cta);
    launch_wide<T, false, false>(cols, out, codes, act_scales, w, bias, accumulate, stream, n_cta);
  });
}

bool fp8_gemm_wgmma_ws_glu_applies(const Tensor& act, const Tensor& codes, const Fp8Weight& w) {
  // The product's own conditions on the [n, 2 inter] output it replaces (a shape only: nothing is
  // read through it), and whole 128-column tiles: a tile's gate box must not run into the up rows.
  if (act.ndim != 2 || !w.w.defined() || w.w.ndim != 2 || w.w.size(0) != 2 * act.size(1) || act.size(1) % 128 != 0)
    return false;
  const Tensor gate_up_shape(act.data, act.dtype, act.device, {act.size(0), w.w.size(0)});
  return act.stride[1] == 1 && fp8_gemm_wgmma_ws_applies(gate_up_shape, codes, w);
}

void launch_fp8_gemm_wgmma_ws_glu(const Tensor& act, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                                  Activation f, cudaStream_t stream, Fp8WsAccum accum, int cluster) {
  SEAM_CHECK(fp8_gemm_wgmma_ws_glu_applies(act, codes, w),
             "fp8 gemm (wgmma, warp-specialised, GLU): not available for act ", act.shape_str(), " codes ",
             codes.shape_str(), " w ", w.w.shape_str(),
             " (needs the product's conditions, w [2 inter, K] with inter % 128 == 0, act [n, inter])");
  const int64_t n = act.size(0);
  if (n == 0) return;
  const bool block = w.w_scheme == Fp8WeightScheme::block128;
  const bool fast = fp8_gemm_wgmma_ws_accum(accum) == Fp8WsAccum::fast;
  const int n_cta = cluster_ctas(cluster, 256);
  check_act_scales(act_scales, w, n, "fp8 gemm (wgmma, warp-specialised, GLU)");
  SEAM_DISPATCH_FLOAT_TYPES(act.dtype, T, "fp8 gemm (wgmma, warp-specialised, GLU)", [&] {
    const auto by_act = [&](auto fast_tag, auto block_tag) {
      constexpr bool kFast = decltype(fast_tag)::value, kBlock = decltype(block_tag)::value;
      if (f == Activation::silu)
        return launch_typed<T, kBlock, 2, kFast, 1 + int(Activation::silu)>(act, codes, act_scales, w, Tensor(), false,
                                                                             stream, n_cta);
      launch_typed<T, kBlock, 2, kFast, 1 + int(Activation::gelu_tanh)>(act, codes, act_scales, w, Tensor(), false,
                                                                       stream, n_cta);
    };
    if (block) return by_act(std::false_type{}, std::true_type{});
    if (fast) return by_act(std::true_type{}, std::false_type{});
    by_act(std::false_type{}, std::false_type{});
  });
}

}  // namespace seam::cuda
