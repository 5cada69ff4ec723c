#include "backend/cuda/fp8_scaled_gated_act_quantize.h"

#include "backend/cuda/activation.cuh"
#include "backend/cuda/cluster.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/fp8_act.cuh"
#include "backend/cuda/fp8_row_quantize.cuh"

namespace seam::cuda {

namespace {

constexpr int64_t kMaxInter = 16384;

__device__ __forceinline__ float lane_of(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// The weight scales of 8 consecutive outputs from k: per-channel (step 1) two 16-byte loads (the
// scales 16-byte aligned, k % 8 == 0); per-tensor (step 0) the one scale. Scalar loads were 16
// LSU requests of 8 lines each a chunk, against 4 of 4 lines for the chunk's sums.
__device__ __forceinline__ void load_scales8(float (&d)[8], const float* ws, int64_t k, int step) {
  if (step == 0) {
    const float w = ws[0];
#pragma unroll
    for (int i = 0; i < 8; ++i) d[i] = w;
    return;
  }
  const float4 a = *reinterpret_cast<const float4*>(ws + k), b = *reinterpret_cast<const float4*>(ws + k + 4);
  d[0] = a.x, d[1] = a.y, d[2] = a.z, d[3] = a.w, d[4] = b.x, d[5] = b.y, d[6] = b.z, d[7] = b.w;
}

// One block a row, fp8_gated_act_quantize.cu's row layout (chunk c of 8 values in thread
// c % kRowThreads). The row's sums are read in waves of kWave chunks a thread: a wave's gate and
// up loads are all issued before its first store (act may alias them as far as the compiler
// knows), then per element the scale epilogue's arithmetic for gate and for up
// (fp8_scale_epilogue.cu: (xs * ws) * S rounded to T), the gated activation's (f(gate) * up
// rounded to T), act stored 16 bytes at a time and kept packed; after the last wave the row's
// codes and scale from the held values (fp8_row_quantize.cuh).
// Waves on 256 threads (2 blocks an SM) and 1,024 threads holding the whole row (1 block an SM)
// measured the same at 2,048 rows (144.5 / 146.3 µs, 2.2 TB/s, twenty-third pass): occupancy was
// not what held the kernel. The scale loads were part of it (load_scales8: ~16 µs a call); the
// rest, the kernel still well under its 4 TB/s, is not known (docs/performance.md).
// kWriteAct false: act is not stored (the values, codes and scales are the same).
// kCluster > 1 (decode batches, SEAM_FP8_GATED_CLUSTER): a row on a cluster of kCluster CTAs of kRowThreads
// threads, launched as clusters along x (grid n * kCluster), holding its chunks as one CTA of
// kCluster * kRowThreads threads would (quantize_row_chunks_cluster), so the row's loads come from kCluster SMs.
// Why: a decode batch's 64 rows ran on 64 of 132 SMs, 8.5-8.8 us for 7.3 MB of sums (FP8 Llama-3.1-8B batch 64,
// H200 trace, thirty-second pass), far under the bandwidth; each SM had ~230 KB to fetch with the loads one SM
// keeps in flight.
template <typename T, Activation F, int kRowThreads, int kChunks, bool kWriteAct, int kCluster = 1>
__global__ void __launch_bounds__(kRowThreads)
    fp8_scaled_gated_act_quantize_kernel(T* act, int64_t act_stride, uint8_t* codes, float* scales, const float* sums,
                                         const float* xs, const float* ws, int ws_step, int inter, float ub) {
  constexpr int kWave = 2;
  static_assert(kChunks % kWave == 0, "whole waves");
  pdl_begin();
  __shared__ float scratch[32];
  __shared__ float part;  // this CTA's amax, read by the cluster's other CTAs (kCluster > 1)
  constexpr int kVT = kRowThreads * kCluster;  // the row's threads
  const int64_t row = blockIdx.x / kCluster;
  const int vt = (kCluster > 1 ? int(cluster::cta_rank()) : 0) * kRowThreads + int(threadIdx.x);
  const float4* gate = reinterpret_cast<const float4*>(sums + row * 2 * inter);
  const float4* up = gate + inter / 4;
  uint4* out = reinterpret_cast<uint4*>(act + row * act_stride);
  const int n_chunks = inter / 8;
  const float x_s = xs[row];
  uint4 v[kChunks];
#pragma unroll
  for (int s0 = 0; s0 < kChunks; s0 += kWave) {
    float4 g[kWave][2], u[kWave][2];
#pragma unroll
    for (int j = 0; j < kWave; ++j) {
      const int c = (s0 + j) * kVT + vt;
      const bool in = c < n_chunks;
      g[j][0] = in ? gate[2 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
      g[j][1] = in ? gate[2 * c + 1] : make_float4(0.f, 0.f, 0.f, 0.f);
      u[j][0] = in ? up[2 * c] : make_float4(0.f, 0.f, 0.f, 0.f);
      u[j][1] = in ? up[2 * c + 1] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < kWave; ++j) {
      const int s = s0 + j, c = s * kVT + vt;
      v[s] = make_uint4(0, 0, 0, 0);
      if (c >= n_chunks) continue;
      T* ve = reinterpret_cast<T*>(&v[s]);
      float wg[8], wu[8];
      load_scales8(wg, ws, int64_t(8) * c, ws_step);
      load_scales8(wu, ws, int64_t(inter) + 8 * c, ws_step);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float gv = to_float(from_float<T>((x_s * wg[i]) * lane_of(g[j][i / 4], i % 4)));
        const float uv = to_float(from_float<T>((x_s * wu[i]) * lane_of(u[j][i / 4], i % 4)));
        ve[i] = from_float<T>(activate<F>(gv) * uv);
      }
      if constexpr (kWriteAct) out[c] = v[s];
    }
  }
  if constexpr (kCluster == 1)
    quantize_row_chunks<T, kRowThreads, kChunks>(v, n_chunks, int(Fp8ActScheme::dynamic_per_token), 0.f, ub,
                                                 codes + row * inter, scales, row, gridDim.x, scratch);
  else
    quantize_row_chunks_cluster<T, kRowThreads, kChunks, kCluster>(v, n_chunks, ub, codes + row * inter, scales, row,
                                                                    scratch, &part);
}

template <typename T, bool kWriteAct>
void launch_typed(const Tensor& act, uint8_t* codes, float* scales, const float* sums, const float* xs,
                  const Fp8Weight& w, Activation f, float ub, cudaStream_t stream, int cluster) {
  if constexpr (sizeof(T) != 2) {
    SEAM_ASSERT(false, "fp8 scaled gated act quantize: 16-bit outputs only");
  } else {
    const int64_t n = act.size(0), inter = act.size(1);
    const int ws_step = w.w_scheme == Fp8WeightScheme::per_channel ? 1 : 0;
    const auto launch = [&](auto threads_c, auto k) {
      constexpr int kThreadsC = decltype(threads_c)::value, K = decltype(k)::value;
      auto kernel = f == Activation::silu
                        ? fp8_scaled_gated_act_quantize_kernel<T, Activation::silu, kThreadsC, K, kWriteAct>
                        : fp8_scaled_gated_act_quantize_kernel<T, Activation::gelu_tanh, kThreadsC, K, kWriteAct>;
      launch_kernel(kernel, dim3(unsigned(n)), kThreadsC, 0, stream, act.ptr<T>(), act.stride[0], codes, scales, sums,
                    xs, w.w_scale.ptr<const float>(), ws_step, int(inter), ub);
    };
    const int chunks256 = fp8_row_chunks(inter, 256);
    if (!fp8_scaled_gated_act_decode_layout(n, inter))
      with_row_chunks(chunks256, [&](auto k) {
        if constexpr (decltype(k)::value <= 8) launch(std::integral_constant<int, 256>{}, k);
      });
    else if (cluster == 1)
      launch(std::integral_constant<int, 1024>{}, std::integral_constant<int, 2>{});
    else {
      // The 1,024-thread layout on a cluster of 2 CTAs of 512 or 4 of 256 (the same chunk to thread map).
      const auto launch_cluster = [&](auto c) {
        constexpr int C = decltype(c)::value, kThreadsC = 1024 / C;
        auto kernel = f == Activation::silu
                          ? fp8_scaled_gated_act_quantize_kernel<T, Activation::silu, kThreadsC, 2, kWriteAct, C>
                          : fp8_scaled_gated_act_quantize_kernel<T, Activation::gelu_tanh, kThreadsC, 2, kWriteAct, C>;
        launch_kernel_clusters(unsigned(C), kernel, dim3(unsigned(n * C)), kThreadsC, 0, stream, act.ptr<T>(),
                               act.stride[0], codes, scales, sums, xs, w.w_scale.ptr<const float>(), ws_step,
                               int(inter), ub);
      };
      if (cluster == 2)
        launch_cluster(std::integral_constant<int, 2>{});
      else
        launch_cluster(std::integral_constant<int, 4>{});
    }
    SEAM_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

bool fp8_scaled_gated_act_quantize_applies(const Tensor& act, const Fp8Weight& w) {
  if (act.ndim != 2 || (act.dtype != DType::bf16 && act.dtype != DType::f16) || act.stride[1] != 1) return false;
  const int64_t inter = act.size(1);
  return inter > 0 && inter % 8 == 0 && inter <= kMaxInter && aligned16(act.data) && act.stride[0] % 8 == 0 &&
         w.act == Fp8ActScheme::dynamic_per_token &&
         (w.w_scheme == Fp8WeightScheme::per_tensor ||
          (w.w_scheme == Fp8WeightScheme::per_channel && aligned16(w.w_scale.data))) &&
         w.w.defined() && w.w.ndim == 2 && w.w.size(0) == 2 * inter;
}

bool fp8_scaled_gated_act_decode_layout(int64_t n, int64_t inter) {
  // Rows to fill every SM twice over: 256 threads a row, 2, 4 or 8 chunks a thread (kMaxInter =
  // 16,384 = 256 x 8 x 8 values), in waves. Fewer rows (decode batches): up to 1,024 threads a
  // row and one wave, since there the rows in flight, not the SMs' overlap, bound the kernel.
  return fp8_row_chunks(inter, 256) > 2 && n < 2 * int64_t(current_device_sms());
}

int fp8_gated_cluster_default() {
  // 1: one CTA a row (the default); 2 / 4: a decode batch's row on a cluster of that many CTAs (the same bits;
  // clusters of 4 measured no faster end to end, FP8 8B batch 64 on an H100: docs/performance.md, thirty-third pass).
  static const int v = env_choice("SEAM_FP8_GATED_CLUSTER", 1, {1, 2, 4});
  return v;
}

void launch_fp8_scaled_gated_act_quantize(const Tensor& act, uint8_t* codes, float* scales, const float* sums,
                                          const float* xs, const Fp8Weight& w, Activation f, float ub,
                                          cudaStream_t stream, bool write_act, int cluster) {
  SEAM_CHECK(cluster == 1 || cluster == 2 || cluster == 4, "fp8 scaled gated act quantize: clusters of 1, 2 or 4, not ",
             cluster);
  SEAM_CHECK(fp8_scaled_gated_act_quantize_applies(act, w), "fp8 scaled gated act quantize: not available for act ",
             act.shape_str(), " (16-bit, packed aligned rows, inter % 8 == 0 and <= ", kMaxInter,
             ", a per-channel or per-tensor weight of 2 inter rows, per-token activations)");
  SEAM_CHECK((reinterpret_cast<uintptr_t>(codes) & 7) == 0 && aligned16(sums),
             "fp8 scaled gated act quantize: codes must be 8-byte and sums 16-byte aligned");
  if (act.size(0) == 0) return;
  SEAM_CHECK(act.size(0) <= INT32_MAX, "fp8 scaled gated act quantize: too many rows");
  SEAM_DISPATCH_FLOAT_TYPES(act.dtype, T, "fp8 scaled gated act quantize", [&] {
    if (write_act)
      launch_typed<T, true>(act, codes, scales, sums, xs, w, f, ub, stream, cluster);
    else
      launch_typed<T, false>(act, codes, scales, sums, xs, w, f, ub, stream, cluster);
  });
}

}  // namespace seam::cuda
