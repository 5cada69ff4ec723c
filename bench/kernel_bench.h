// seam_kernel_bench's harness (bench/kernel_bench.cu: the method), shared by its sections:
// kernel_bench_fp8.cu (the FP8 GEMV and GEMMs), kernel_bench_fp8_skinny.cu (the skinny FP8 GEMM),
// kernel_bench_moe.cu (the MoE paths), kernel_bench_prefill_small.cu (qk_norm_rope_store, moe_combine, moe_align).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/attention_prefill_wgmma.h"
#include "backend/cuda/attention_prefill_ws.h"
#include "backend/cuda/cublaslt_gemm.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gemm_skinny_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma_ws.h"
#include "backend/cuda/fp8_gemv.h"
#include "backend/cuda/fp8_quantize.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/gemv_experts.h"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_experts.h"
#include "backend/cuda/moe_experts_grouped.h"
#include "backend/cuda/moe_skinny_mma.h"
#include "backend/cuda/moe_skinny_mma_stream.h"
#include "backend/cuda/skinny_gemm.h"
#include "core/tensor.h"
#include "random_fill.cuh"

namespace seam::kbench {

using bench::random_fill_kernel;

// The H200's device-to-device copy ceiling (TB/s): the fallback where none is measured (SEAM_KBENCH_ONCE).
constexpr double kCopyTBs = 4.0;
// bf16 dense GEMM on random data, TFLOP/s, measured on the H200; the H100 SXM has the same tensor cores and
// clocks, so the same ceiling (their difference is memory: 3.35 against 4.8 TB/s nominal).
constexpr double kGemmTFlops = 790.0;

class Bench {
 public:
  Bench() : gpu_(make_cuda_backend(0)), stream_(static_cast<cudaStream_t>(cuda_backend_stream(*gpu_))) {
    SEAM_CUDA_CHECK(cudaEventCreate(&start_));
    SEAM_CUDA_CHECK(cudaEventCreate(&stop_));
    copy_tbs_ = measure_copy_tbs();
  }
  ~Bench() {
    gpu_->synchronize();
    for (void* p : allocs_) gpu_->release(p);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Backend& gpu() { return *gpu_; }
  // This GPU's device-to-device copy ceiling (read + write bytes), measured when the bench starts: a
  // row's "of ceiling" is this GPU's, an H100's as well as the H200's.
  double copy_tbs() const { return copy_tbs_; }
  cudaStream_t stream() const { return stream_; }

  Tensor random(DType t, std::initializer_list<int64_t> dims, float scale = 1.f) {
    Tensor x = alloc(t, dims);
    const int64_t n = x.numel();
    const unsigned blocks = unsigned(std::min<int64_t>((n + 255) / 256, 8192));
    if (t == DType::bf16)
      random_fill_kernel<<<blocks, 256, 0, stream_>>>(x.ptr<__nv_bfloat16>(), n, seed_++, scale);
    else if (t == DType::f16)
      random_fill_kernel<<<blocks, 256, 0, stream_>>>(x.ptr<__half>(), n, seed_++, scale);
    else
      random_fill_kernel<<<blocks, 256, 0, stream_>>>(x.ptr<float>(), n, seed_++, scale);
    SEAM_CUDA_CHECK_LAUNCH();
    return x;
  }
  Tensor alloc(DType t, std::initializer_list<int64_t> dims) {
    Tensor probe(nullptr, t, Device::cuda, dims);
    void* p = gpu_->alloc(probe.nbytes());
    allocs_.push_back(p);
    return Tensor(p, t, Device::cuda, dims);
  }
  Tensor upload_i32(const std::vector<int32_t>& v, std::initializer_list<int64_t> dims) {
    Tensor x = alloc(DType::i32, dims);
    gpu_->copy_h2d(x.data, v.data(), v.size() * 4);
    gpu_->synchronize();
    return x;
  }
  template <typename V>
  Tensor upload(const std::vector<V>& v, DType t, std::initializer_list<int64_t> dims) {
    Tensor x = alloc(t, dims);
    gpu_->copy_h2d(x.data, v.data(), v.size() * sizeof(V));
    gpu_->synchronize();
    return x;
  }
  void release_all() {
    gpu_->synchronize();
    for (void* p : allocs_) gpu_->release(p);
    allocs_.clear();
  }

  // Median microseconds of one call of op(i) (i = call index, for rotating inputs).
  double time_us(const std::function<void(int)>& op, int calls_per_graph = 10, int replays = 15) {
    op(0);  // plans, attributes: everything host-side happens before capture
    gpu_->synchronize();
    if (once_) return 0;  // SEAM_KBENCH_ONCE: each op launched once, eagerly (for a profiler)
    gpu_->begin_capture();
    for (int i = 0; i < calls_per_graph; ++i) op(i);
    auto graph = gpu_->end_capture();
    for (int w = 0; w < 3; ++w) gpu_->replay(*graph);
    std::vector<float> ms;
    for (int r = 0; r < replays; ++r) {
      SEAM_CUDA_CHECK(cudaEventRecord(start_, stream_));
      gpu_->replay(*graph);
      SEAM_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      SEAM_CUDA_CHECK(cudaEventSynchronize(stop_));
      float t = 0;
      SEAM_CUDA_CHECK(cudaEventElapsedTime(&t, start_, stop_));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return double(ms[ms.size() / 2]) * 1000.0 / calls_per_graph;
  }

  // One table row: bytes moved (read + write, each once) and FLOPs give the rates.
  void row(const std::string& op, const std::string& shape, double us, double bytes, double flops) {
    char rate[64] = "", ceil[32] = "";
    const double gbs = bytes / (us * 1e-6) / 1e9, tflops = flops / (us * 1e-6) / 1e12;
    if (flops > 0 && tflops / kGemmTFlops > gbs / (copy_tbs_ * 1000)) {
      std::snprintf(rate, sizeof rate, "%8.1f TFLOP/s", tflops);
      std::snprintf(ceil, sizeof ceil, "%5.1f%% of %g", 100 * tflops / kGemmTFlops, kGemmTFlops);
    } else {
      std::snprintf(rate, sizeof rate, "%8.0f GB/s", gbs);
      std::snprintf(ceil, sizeof ceil, "%5.1f%% of %.2f TB/s", 100 * gbs / (copy_tbs_ * 1000), copy_tbs_);
    }
    std::printf("| %-26s | %-34s | %10.1f | %-16s | %-18s |\n", op.c_str(), shape.c_str(), us, rate, ceil);
    std::fflush(stdout);
  }

 private:
  // A 1 GiB cudaMemcpyAsync device to device, timed as every op is (median of graph replays).
  double measure_copy_tbs() {
    constexpr size_t kBytes = size_t{1} << 30;
    void* src = gpu_->alloc(kBytes);
    void* dst = gpu_->alloc(kBytes);
    const double us = time_us([&](int) { gpu_->copy_d2d(dst, src, kBytes); }, 4, 7);
    gpu_->synchronize();
    gpu_->release(src);
    gpu_->release(dst);
    return us > 0 ? 2.0 * double(kBytes) / (us * 1e-6) / 1e12 : kCopyTBs;
  }

  std::unique_ptr<Backend> gpu_;
  cudaStream_t stream_;
  cudaEvent_t start_{}, stop_{};
  std::vector<void*> allocs_;
  uint64_t seed_ = 12345;
  const bool once_ = std::getenv("SEAM_KBENCH_ONCE") != nullptr;
  double copy_tbs_ = kCopyTBs;
};

// ---- Llama-3.1-8B shapes ----
constexpr int64_t kHidden = 4096, kHeads = 32, kKvHeads = 8, kHeadDim = 128, kInter = 14336, kVocab = 128256;
constexpr int64_t kQkv = (kHeads + 2 * kKvHeads) * kHeadDim;  // 6144
// Llama-3.1-8B's four projections (weight [n_out, n_in]), the rows the FP8 benches time.
struct Projection {
  const char* name;
  int64_t n_out, n_in;
};
constexpr Projection kLlamaProjections[] = {{"qkv_proj", kQkv, kHidden},
                                            {"o_proj", kHidden, kHeads * kHeadDim},
                                            {"gate_up_proj", 2 * kInter, kHidden},
                                            {"down_proj", kHidden, kInter}};
constexpr double kL2Bytes = 60e6;

// RoPE's inverse frequencies at Llama-3's base 500,000: [head_dim / 2].
inline std::vector<float> rope_inv_freq(int64_t head_dim) {
  std::vector<float> inv(static_cast<size_t>(head_dim / 2));
  for (int64_t j = 0; j < head_dim / 2; ++j) inv[size_t(j)] = std::pow(500000.f, -2.f * float(j) / float(head_dim));
  return inv;
}

// `copies` per-channel E4M3 weights [n_out, n_in] quantized from random bf16, dynamic per-token
// activations: the benches cycle through the copies so the weights come from memory, not L2.
inline std::vector<Fp8Weight> fp8_weights(Bench& b, int64_t n_out, int64_t n_in, int copies) {
  std::vector<Fp8Weight> ws(static_cast<size_t>(copies));
  for (Fp8Weight& w : ws) {
    w.w = b.alloc(DType::fp8_e4m3, {n_out, n_in});
    w.w_scale = b.alloc(DType::f32, {n_out});
    w.w_scheme = Fp8WeightScheme::per_channel;
    w.act = Fp8ActScheme::dynamic_per_token;
    b.gpu().quantize_fp8_per_channel(w.w, w.w_scale, b.random(DType::bf16, {n_out, n_in}, 0.02f));
  }
  return ws;
}

// Uniform random top-k routing: for each of n tokens, k distinct experts of E ([n * k] ids).
inline std::vector<int32_t> random_topk_ids(int64_t n, int64_t E, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n * k)), all(static_cast<size_t>(E));
  for (int64_t i = 0; i < n; ++i) {  // each token's shuffle starts from 0..E-1 (the benches' draws as before)
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::copy(all.begin(), all.begin() + k, ids.begin() + i * k);
  }
  return ids;
}

// The sections in their own files.
void bench_fp8_gemm(Bench& b);
void bench_fp8_skinny(Bench& b);
void bench_fp8_scaled_gated_act(Bench& b);
void bench_fp8_scale_norm_quantize(Bench& b);
void bench_moe_grouped(Bench& b, int n_tokens);
void bench_moe_skinny(Bench& b, int n_tokens);
void bench_moe_batch1(Bench& b, const char* model, int64_t E, int64_t I, int64_t H, int64_t k);
void bench_moe_router(Bench& b, const char* model, int64_t E, int64_t H, int64_t k);
void bench_qk_norm_rope_store(Bench& b, int n);
void bench_moe_combine(Bench& b, int n);
void bench_moe_align(Bench& b, int n);
void bench_rms_norm_rows(Bench& b, int n);

}  // namespace seam::kbench
