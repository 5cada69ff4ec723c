// seam_kernel_bench: times the CUDA backend's ops at Llama-3.1-8B shapes and prints,
// per op and shape, the median time and the achieved rate against the device's
// ceilings (/work/shared/DEVICE.md: copy ~4.0 TB/s, bf16 GEMM ~790-890 TFLOP/s).
//
// Method: each measured op is captured R times into a CUDA graph (so host launch
// cost stays out) and the graph is replayed after warm-up; the median over replays,
// divided by R, is the op's time. Ops whose inputs could sit in the 60 MB L2 rotate
// among several input copies so each call reads from device memory. Inputs are
// random (never zeros). Usage: seam_kernel_bench [--quick | --gemv | --small-m | --moe | --fp8]
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/attention_prefill_wgmma.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cublaslt_gemm.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemv.h"
#include "backend/cuda/fp8_gemm_wgmma_ws.h"
#include "backend/cuda/fp8_quantize.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/moe_combine.h"
#include "backend/cuda/moe_experts.h"
#include "backend/cuda/moe_experts_grouped.h"
#include "backend/cuda/moe_skinny_mma.h"
#include "backend/cuda/moe_skinny_mma_stream.h"
#include "backend/cuda/skinny_gemm.h"
#include "core/tensor.h"
#include "random_fill.cuh"

namespace seam {
namespace {

using bench::random_fill_kernel;

constexpr double kCopyTBs = 4.0;       // device-to-device copy ceiling, TB/s
constexpr double kGemmTFlops = 790.0;  // bf16 dense GEMM on random data, TFLOP/s

class Bench {
 public:
  Bench() : gpu_(make_cuda_backend(0)), stream_(static_cast<cudaStream_t>(cuda_backend_stream(*gpu_))) {
    SEAM_CUDA_CHECK(cudaEventCreate(&start_));
    SEAM_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~Bench() {
    gpu_->synchronize();
    for (void* p : allocs_) gpu_->release(p);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  Backend& gpu() { return *gpu_; }
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
    if (flops > 0 && tflops / kGemmTFlops > gbs / (kCopyTBs * 1000)) {
      std::snprintf(rate, sizeof rate, "%8.1f TFLOP/s", tflops);
      std::snprintf(ceil, sizeof ceil, "%5.1f%% of %g", 100 * tflops / kGemmTFlops, kGemmTFlops);
    } else {
      std::snprintf(rate, sizeof rate, "%8.0f GB/s", gbs);
      std::snprintf(ceil, sizeof ceil, "%5.1f%% of %g TB/s", 100 * gbs / (kCopyTBs * 1000), kCopyTBs);
    }
    std::printf("| %-26s | %-34s | %10.1f | %-16s | %-18s |\n", op.c_str(), shape.c_str(), us, rate, ceil);
    std::fflush(stdout);
  }

 private:
  std::unique_ptr<Backend> gpu_;
  cudaStream_t stream_;
  cudaEvent_t start_{}, stop_{};
  std::vector<void*> allocs_;
  uint64_t seed_ = 12345;
};

// ---- Llama-3.1-8B shapes ----
constexpr int64_t kHidden = 4096, kHeads = 32, kKvHeads = 8, kHeadDim = 128, kInter = 14336, kVocab = 128256;
constexpr int64_t kQkv = (kHeads + 2 * kKvHeads) * kHeadDim;  // 6144
constexpr double kL2Bytes = 60e6;

// RoPE's inverse frequencies at Llama-3's base 500,000: [head_dim / 2].
std::vector<float> rope_inv_freq(int64_t head_dim) {
  std::vector<float> inv(static_cast<size_t>(head_dim / 2));
  for (int64_t j = 0; j < head_dim / 2; ++j) inv[size_t(j)] = std::pow(500000.f, -2.f * float(j) / float(head_dim));
  return inv;
}

// Which GEMM rows a run prints: all; quick (no 64-row 8B rows); batch1 (the GEMV and cuBLASLt
// beside it); small_m (every projection at 2-32 rows: the skinny GEMM beside cuBLASLt).
enum class GemmRows { all, quick, batch1, small_m };

void bench_gemms(Bench& b, GemmRows rows) {
  struct G {
    const char* name;
    int64_t n_out, n_in;
    bool f32_out;
    int64_t heads = 0, kv_heads = 0, head_dim = 0;  // qkv only: the fused norm + RoPE + K/V store row
  };
  // Llama-3.1-8B, then the decode projections of Llama-3.2-1B and Qwen2.5-0.5B.
  const G gemms[] = {{"qkv_proj", kQkv, kHidden, false, kHeads, kKvHeads, kHeadDim},
                     {"o_proj", kHidden, kHeads * kHeadDim, false},
                     {"gate_up_proj", 2 * kInter, kHidden, false},
                     {"down_proj", kHidden, kInter, false},
                     {"lm_head (f32 out)", kVocab, kHidden, true}};
  const G small[] = {{"1B qkv_proj", 3072, 2048, false, 32, 8, 64}, {"1B o_proj", 2048, 2048, false},
                     {"1B gate_up_proj", 16384, 2048, false},        {"1B down_proj", 2048, 8192, false},
                     {"0.5B qkv_proj", 1152, 896, false, 14, 2, 64}, {"0.5B o_proj", 896, 896, false},
                     {"0.5B gate_up_proj", 9728, 896, false},        {"0.5B down_proj", 896, 4864, false}};
  cuda::CublasLtGemm cublas;
  // One linear's operands and what a row reports: random weights in enough copies that one pass
  // over them is 3x the L2 (matters for small M), x, out, the bytes moved and the FLOPs.
  struct Problem {
    std::vector<Tensor> ws;  // each [n_out, n_in]
    int copies = 0;
    Tensor x, out;           // [m, n_in], [m, n_out]
    double bytes = 0, flops = 0;
    std::string shape;
    const Tensor& w(int i) const { return ws[size_t(i % copies)]; }  // the i-th call's weight copy
  };
  auto make_problem = [&](const G& g, int64_t m) {
    Problem p;
    const double w_bytes = double(g.n_out * g.n_in) * 2;
    p.copies = m >= 1024 ? 1 : std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
    for (int c = 0; c < p.copies; ++c) p.ws.push_back(b.random(DType::bf16, {g.n_out, g.n_in}, 0.02f));
    p.x = b.random(DType::bf16, {m, g.n_in});
    p.out = b.alloc(g.f32_out ? DType::f32 : DType::bf16, {m, g.n_out});
    p.bytes = w_bytes + double(m * g.n_in) * 2 + double(m * g.n_out) * (g.f32_out ? 4 : 2);
    p.shape = "M=" + std::to_string(m) + " N=" + std::to_string(g.n_out) + " K=" + std::to_string(g.n_in);
    p.flops = 2.0 * double(m) * double(g.n_out) * double(g.n_in);
    return p;
  };
  auto one = [&](const G& g, int64_t m, bool with_cublas) {
    const Problem p = make_problem(g, m);
    const Tensor &x = p.x, &out = p.out;
    const std::string& shape = p.shape;
    const double bytes = p.bytes, flops = p.flops;
    const bool gemv = cuda::gemv_applies(out, x, p.ws[0], Tensor{});
    const double us = b.time_us([&](int i) { b.gpu().linear(out, x, p.w(i), Tensor{}); });
    b.row(std::string("linear ") + g.name + (gemv ? " (gemv)" : ""), shape, us, bytes, flops);
    if (gemv) {  // the fused forms a decode step runs: RMSNorm in front, or the residual add behind
      Tensor norm_w = b.random(DType::bf16, {g.n_in}, 1.f), normed = b.alloc(DType::bf16, {m, g.n_in});
      const double us_norm = b.time_us(
          [&](int i) { b.gpu().rms_norm_linear(out, normed, x, norm_w, 1e-5f, p.w(i), Tensor{}); });
      b.row(std::string("rms_norm + linear ") + g.name + " (gemv)", shape, us_norm, bytes, flops);
      if (std::string(g.name).find("gate_up") != std::string::npos) {  // + SiLU * up: writes [m, n_out / 2]
        Tensor act = b.alloc(DType::bf16, {m, g.n_out / 2}), gate_up = b.alloc(DType::bf16, {m, g.n_out});
        const double us_glu = b.time_us([&](int i) {
          b.gpu().rms_norm_gate_up_silu(act, gate_up, normed, x, norm_w, 1e-5f, p.w(i));
        });
        b.row(std::string("rms_norm + linear + silu_mul ") + g.name + " (gemv)", shape, us_glu, bytes, flops);
      }
      if (g.heads > 0 && m == 1) {  // the decode step's qkv: norm, RoPE and the K/V store in one GEMV
        const int64_t d = g.head_dim, n_slots = 64;
        RopeStoreArgs r;
        r.n_heads = int(g.heads);
        r.positions = b.upload_i32({1000}, {1});
        r.inv_freq = b.upload(rope_inv_freq(d), DType::f32, {d / 2});
        r.k_cache = b.alloc(DType::bf16, {n_slots, g.kv_heads, d});
        r.v_cache = b.alloc(DType::bf16, {n_slots, g.kv_heads, d});
        r.slots = b.upload_i32({7}, {1});
        const double us_rope = b.time_us([&](int i) {
          b.gpu().rms_norm_qkv_rope_store(out, normed, x, norm_w, 1e-5f, p.w(i), Tensor{}, r);
        });
        b.row(std::string("rms_norm + linear + rope + kv store ") + g.name + " (gemv)", shape, us_rope, bytes, flops);
      }
      if (!g.f32_out) {
        const double us_acc =
            b.time_us([&](int i) { b.gpu().linear_accumulate(out, x, p.w(i), Tensor{}); });
        b.row(std::string("linear + residual add ") + g.name + " (gemv)", shape, us_acc, bytes + double(m * g.n_out) * 2,
              flops);
      }
    }
    if (with_cublas && gemv) {  // the same problem through cuBLASLt, for comparison
      const double us_cublas =
          b.time_us([&](int i) { cublas.run(out, x, p.w(i), Tensor{}, b.stream()); });
      b.row(std::string("linear ") + g.name + " (cuBLASLt)", shape, us_cublas, bytes, flops);
    }
    b.release_all();
  };
  if (rows == GemmRows::small_m) {
    // Decode batches and short extends (2-16 rows; 32 for reference): the skinny tensor-core
    // GEMM and cuBLASLt on the same problem, every projection of the three shapes.
    auto pair = [&](const G& g, int64_t m) {
      const Problem p = make_problem(g, m);
      if (cuda::skinny_gemm_applies(p.out, p.x, p.ws[0], Tensor{})) {
        const double us =
            b.time_us([&](int i) { cuda::launch_skinny_gemm(p.out, p.x, p.w(i), Tensor{}, false, b.stream()); });
        b.row(std::string("linear ") + g.name + " (skinny)", p.shape, us, p.bytes, p.flops);
      }
      const double us_cublas = b.time_us([&](int i) { cublas.run(p.out, p.x, p.w(i), Tensor{}, b.stream()); });
      b.row(std::string("linear ") + g.name + " (cuBLASLt)", p.shape, us_cublas, p.bytes, p.flops);
      b.release_all();
    };
    for (int64_t m : {2, 4, 8, 12, 16, 32}) {
      for (const G& g : small) pair(g, m);
      for (const G& g : gemms) pair(g, m);
    }
    return;
  }
  for (int64_t m : {int64_t(1), int64_t(64), int64_t(4096)}) {
    if ((rows == GemmRows::quick && m == 64) || (rows == GemmRows::batch1 && m > 1)) continue;
    for (const G& g : gemms) one(g, m, m == 1);
  }
  for (const G& g : small) one(g, 1, true);
}

// FP8 linear products (issue 22) at the 8B projections, M = 64 (decode batch) and 4,096 (prefill):
// per-channel E4M3 weights (quantized from random bf16), per-token activations quantized once
// outside the timing, bf16 out. The wgmma GEMM with its fused scales (fp8_gemm_wgmma.h, tile in
// the name) against the cuBLASLt route it replaces (fp8_cublaslt.h: on the H200 the unscaled
// E4M3 GEMM + the float32 scale epilogue), and the whole op (activation quantization + product)
// as linear_fp8 runs it; the warp-specialised wgmma GEMM (fp8_gemm_wgmma_ws.h) beside the
// one-block one. Bytes: weight + x codes once, out once; FLOPs 2 M N K against the
// 1,580 TFLOP/s FP8 peak issue 22 measures against.
void bench_fp8_gemm(Bench& b) {
  constexpr double kFp8TFlops = 1580.0;
  const struct {
    const char* name;
    int64_t n_out, n_in;
  } shapes[] = {{"qkv_proj", kQkv, kHidden},
                {"o_proj", kHidden, kHeads * kHeadDim},
                {"gate_up_proj", 2 * kInter, kHidden},
                {"down_proj", kHidden, kInter}};
  cuda::Fp8CublasLt lt;
  auto row = [&](const std::string& op, const std::string& shape, double us, double bytes, double flops) {
    const double gbs = bytes / (us * 1e-6) / 1e9, tflops = flops / (us * 1e-6) / 1e12;
    std::printf("| %-40s | %-26s | %10.1f | %7.1f TFLOP/s %5.1f%% | %6.0f GB/s %5.1f%% |\n", op.c_str(), shape.c_str(),
                us, tflops, 100 * tflops / kFp8TFlops, gbs, 100 * gbs / (kCopyTBs * 1000));
    std::fflush(stdout);
  };
  int n_sms = 0;
  SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, 0));
  // The batch-1 decode GEMV (fp8_gemv.h) on each inner loop (SEAM_FP8_GEMV): the CUDA-core FMAs
  // and the E4M3 tensor cores, with the activation quantization in its prologue (x bf16), gate_up
  // with its GLU epilogue as a decode step runs it. Bytes: weight + x + out once (the weights
  // dominate: TB/s against the copy bandwidth is the figure to read); weights cycled through
  // enough copies to leave the L2.
  for (const auto& g : shapes) {
    const int64_t m = 1;
    const bool glu = g.n_out == 2 * kInter;
    const double w_bytes = double(g.n_out * g.n_in);
    const int copies = std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
    std::vector<Fp8Weight> ws(static_cast<size_t>(copies));
    for (Fp8Weight& w : ws) {
      w.w = b.alloc(DType::fp8_e4m3, {g.n_out, g.n_in});
      w.w_scale = b.alloc(DType::f32, {g.n_out});
      w.w_scheme = Fp8WeightScheme::per_channel;
      w.act = Fp8ActScheme::dynamic_per_token;
      b.gpu().quantize_fp8_per_channel(w.w, w.w_scale, b.random(DType::bf16, {g.n_out, g.n_in}, 0.02f));
    }
    const Tensor x = b.random(DType::bf16, {m, g.n_in});
    const int64_t n_out = glu ? g.n_out / 2 : g.n_out;
    const Tensor out = b.alloc(DType::bf16, {m, n_out});
    cuda::Fp8GemvFusion f;
    f.glu = glu;
    const double bytes = w_bytes + double(m * g.n_in) * 2 + double(m * n_out) * 2;
    const double flops = 2.0 * double(m) * double(g.n_out) * double(g.n_in);
    const std::string shape = "M=1 N=" + std::to_string(g.n_out) + " K=" + std::to_string(g.n_in);
    for (cuda::Fp8GemvKernel k : {cuda::Fp8GemvKernel::fma, cuda::Fp8GemvKernel::mma}) {
      const double us = b.time_us([&](int i) {
        cuda::launch_fp8_gemv(out, x, ws[size_t(i % copies)], Tensor{}, false, b.stream(), f, k);
      });
      row(std::string("fp8 gemv ") + g.name + (glu ? " + silu_mul" : "") +
              (k == cuda::Fp8GemvKernel::mma ? " (mma)" : " (fma)"),
          shape, us, bytes, flops);
    }
    // The mma loop's variants (Fp8GemvMmaTuning, SEAM_FP8_GEMV_MMA_KSPLIT / _UNROLL / _RELOAD):
    // every split with each unroll / reload, one row each (the plain "(mma)" row above is
    // "ksplit 1 unroll 4 sweep").
    for (int ksplit : {1, 2, 4, 0})
      for (const auto& [unroll, rolling] : {std::pair{4, false}, std::pair{2, false}, std::pair{4, true}, std::pair{8, true}}) {
        cuda::Fp8GemvMmaTuning tune;
        tune.ksplit = ksplit;
        tune.unroll = unroll;
        tune.rolling = rolling;
        const double us = b.time_us([&](int i) {
          cuda::launch_fp8_gemv(out, x, ws[size_t(i % copies)], Tensor{}, false, b.stream(), f,
                                cuda::Fp8GemvKernel::mma, tune);
        });
        row(std::string("fp8 gemv ") + g.name + (glu ? " + silu_mul" : "") + " (mma " +
                cuda::fp8_gemv_mma_tuning_name(tune) + ")",
            shape, us, bytes, flops);
      }
    // Deeper L2 prefetch before the prologue (SEAM_FP8_GEMV_MMA_PREFETCH): a whole slice of
    // down_proj's (28 steps a warp at K = 14,336), with the default loop and unroll 8.
    for (int ksplit : {1, 0})
      for (int unroll : {4, 8}) {
        cuda::Fp8GemvMmaTuning tune;
        tune.ksplit = ksplit;
        tune.unroll = unroll;
        tune.rolling = unroll == 8;
        tune.prefetch = 64;
        const double us = b.time_us([&](int i) {
          cuda::launch_fp8_gemv(out, x, ws[size_t(i % copies)], Tensor{}, false, b.stream(), f,
                                cuda::Fp8GemvKernel::mma, tune);
        });
        row(std::string("fp8 gemv ") + g.name + (glu ? " + silu_mul" : "") + " (mma " +
                cuda::fp8_gemv_mma_tuning_name(tune) + ")",
            shape, us, bytes, flops);
      }
    b.release_all();
  }
  for (int64_t m : {int64_t(64), int64_t(4096)})
    for (const auto& g : shapes) {
      const double w_bytes = double(g.n_out * g.n_in);
      const int copies = m >= 1024 ? 1 : std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
      std::vector<Fp8Weight> ws(static_cast<size_t>(copies));
      for (Fp8Weight& w : ws) {
        w.w = b.alloc(DType::fp8_e4m3, {g.n_out, g.n_in});
        w.w_scale = b.alloc(DType::f32, {g.n_out});
        w.w_scheme = Fp8WeightScheme::per_channel;
        w.act = Fp8ActScheme::dynamic_per_token;
        b.gpu().quantize_fp8_per_channel(w.w, w.w_scale, b.random(DType::bf16, {g.n_out, g.n_in}, 0.02f));
      }
      const Tensor x = b.random(DType::bf16, {m, g.n_in});
      const Tensor codes = b.alloc(DType::fp8_e4m3, {m, g.n_in}), scales = b.alloc(DType::f32, {1, m});
      cuda::launch_fp8_quantize_act(codes, scales, x, ws[0], b.stream());
      const Tensor out = b.alloc(DType::bf16, {m, g.n_out});
      const double bytes = w_bytes + double(m * g.n_in) + double(m * g.n_out) * 2;
      const double flops = 2.0 * double(m) * double(g.n_out) * double(g.n_in);
      const std::string shape =
          "M=" + std::to_string(m) + " N=" + std::to_string(g.n_out) + " K=" + std::to_string(g.n_in);
      auto w_of = [&](int i) -> const Fp8Weight& { return ws[size_t(i % copies)]; };
      if (cuda::fp8_gemm_wgmma_applies(out, codes, ws[0])) {
        const cuda::Fp8WgmmaTile t = cuda::fp8_gemm_wgmma_tile(m, g.n_out, n_sms);
        for (int overlap : {1, 0}) {  // the main loop's two forms (fp8_gemm_wgmma.h)
          const double us = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma(out, codes, scales, w_of(i), Tensor{}, false, b.stream(), overlap);
          });
          row(std::string("fp8 ") + g.name + " wgmma " + std::to_string(t.rows) + "x" + std::to_string(t.cols) +
                  (overlap ? " overlap" : " serial"),
              shape, us, bytes, flops);
        }
      }
      // The warp-specialised TMA kernel (fp8_gemm_wgmma_ws.h): SEAM_FP8_GEMM=ws takes it past 64 rows.
      if (cuda::fp8_gemm_wgmma_ws_applies(out, codes, ws[0])) {
        for (int cols : {256, 128}) {  // its two tile widths (SEAM_FP8_WS_TILE_N)
          const double us = b.time_us([&](int i) {
            cuda::launch_fp8_gemm_wgmma_ws(out, codes, scales, w_of(i), Tensor{}, false, b.stream(), cols);
          });
          row(std::string("fp8 ") + g.name + " wgmma ws " + std::to_string(cuda::kFp8WsTileRows) + "x" +
                  std::to_string(cols) + (m > cuda::kFp8WsMinRows ? "" : " (not routed)"),
              shape, us, bytes, flops);
        }
      } else {
        std::printf("| %-40s | %-26s | (wgmma GEMM not available: needs sm_90a build + CC 9.0) |\n", g.name,
                    shape.c_str());
      }
      const double us_lt = b.time_us([&](int i) {
        SEAM_CHECK(lt.run(out, codes, scales, w_of(i), Tensor{}, false, b.gpu().capturing(), b.stream()),
                   "cuBLASLt has no FP8 route for ", shape);
      });
      row(std::string("fp8 ") + g.name + " cuBLASLt route", shape, us_lt, bytes, flops);
      const double us_op = b.time_us([&](int i) { b.gpu().linear_fp8(out, x, w_of(i), Tensor{}, false); });
      row(std::string("linear_fp8 ") + g.name + " (quantize + product)", shape, us_op, bytes + double(m * g.n_in) * 2,
          flops);
      b.release_all();
    }
}

// An attention shape: heads, kv heads, head dim, and a window (0: none).
struct AttnShape {
  int64_t heads = kHeads, kv_heads = kKvHeads, d = kHeadDim;
  int window = 0;
  bool kv_fp8 = false;  // an FP8 E4M3 KV cache (--kv-cache-dtype fp8_e4m3): 1 byte a K/V element
  std::string label() const {
    return std::to_string(heads) + "/" + std::to_string(kv_heads) + "x" + std::to_string(d) +
           (window > 0 ? " w" + std::to_string(window) : "") + (kv_fp8 ? " fp8 KV" : "");
  }
};

// Decode attention: `batch` sequences of `ctx` tokens each (this step's token included). With a
// window, only its keys are read: the bytes column counts those.
void bench_decode_attention(Bench& b, int batch, int ctx, bool shuffled, const AttnShape& sh = {}) {
  const int64_t n_slots = int64_t(batch) * ctx, n_kv = sh.kv_heads, hd = sh.d, n_heads = sh.heads;
  Tensor kc = b.random(DType::bf16, {n_slots, n_kv, hd});
  Tensor vc = b.random(DType::bf16, {n_slots, n_kv, hd});
  if (sh.kv_fp8) {  // the codes of the random keys and values, slot i from row i
    std::vector<int32_t> all(static_cast<size_t>(n_slots));
    std::iota(all.begin(), all.end(), 0);
    Tensor k8 = b.alloc(DType::fp8_e4m3, {n_slots, n_kv, hd}), v8 = b.alloc(DType::fp8_e4m3, {n_slots, n_kv, hd});
    b.gpu().store_kv(k8, v8, kc, vc, b.upload_i32(all, {n_slots}));
    kc = k8;
    vc = v8;
  }
  Tensor q = b.random(DType::bf16, {batch, n_heads, hd});
  Tensor out = b.alloc(DType::bf16, {batch, n_heads, hd});
  std::vector<int32_t> pt(static_cast<size_t>(n_slots));
  std::iota(pt.begin(), pt.end(), 0);
  if (shuffled) {  // pages scattered over the pool, as after many allocations and frees
    std::mt19937 rng(7);
    std::shuffle(pt.begin(), pt.end(), rng);
  }
  std::vector<int32_t> indptr(size_t(batch) + 1), lens(size_t(batch), ctx), rows(static_cast<size_t>(batch));
  std::iota(indptr.begin(), indptr.end(), 0);
  std::iota(rows.begin(), rows.end(), 0);
  AttentionBatch ab;
  ab.n_tokens = batch;
  ab.n_seqs = batch;
  ab.max_seq_len = 0;  // as in a decode graph
  ab.qo_indptr = b.upload_i32(indptr, {batch + 1});
  ab.seq_lens = b.upload_i32(lens, {batch});
  ab.req_rows = b.upload_i32(rows, {batch});
  ab.page_table = b.upload_i32(pt, {batch, ctx});
  AttentionOptions o;
  o.scale = 1.f / std::sqrt(float(hd));
  o.sliding_window = sh.window;
  const double us = b.time_us([&](int) { b.gpu().attention(out, q, kc, vc, ab, o); }, 5, 11);
  const int64_t keys = sh.window > 0 ? std::min<int64_t>(ctx, sh.window) : ctx;  // keys a row reads
  const double kv_bytes = double(batch) * keys * n_kv * hd * 2 * (sh.kv_fp8 ? 1 : 2);
  b.row(std::string("attention decode") + (shuffled ? " (shuffled)" : ""),
        "batch " + std::to_string(batch) + " ctx " + std::to_string(ctx) + " " + sh.label(), us, kv_bytes,
        4.0 * double(batch) * keys * n_heads * hd);
  b.release_all();
}

void bench_prefill_attention(Bench& b, int n_tokens, const AttnShape& sh = {}) {
  const int64_t n_kv = sh.kv_heads, hd = sh.d, n_heads = sh.heads, qkv_width = (n_heads + 2 * n_kv) * hd;
  Tensor qkv = b.random(DType::bf16, {n_tokens, qkv_width});
  Tensor kc = b.random(DType::bf16, {n_tokens, n_kv, hd});
  Tensor vc = b.random(DType::bf16, {n_tokens, n_kv, hd});
  Tensor out = b.alloc(DType::bf16, {n_tokens, n_heads, hd});
  std::vector<int32_t> pt(static_cast<size_t>(n_tokens));
  std::iota(pt.begin(), pt.end(), 0);
  AttentionBatch ab;
  ab.n_tokens = n_tokens;
  ab.n_seqs = 1;
  ab.n_prefill_seqs = 1;
  ab.n_prefill_tokens = n_tokens;
  ab.max_seq_len = n_tokens;
  ab.qo_indptr = b.upload_i32({0, n_tokens}, {2});
  ab.seq_lens = b.upload_i32({n_tokens}, {1});
  ab.req_rows = b.upload_i32({0}, {1});
  ab.page_table = b.upload_i32(pt, {1, n_tokens});
  Tensor q = qkv.slice_cols(0, n_heads * hd).unflatten_last(n_heads, hd);
  AttentionOptions o;
  o.scale = 1.f / std::sqrt(float(hd));
  o.sliding_window = sh.window;
  const double us = b.time_us([&](int) { b.gpu().attention(out, q, kc, vc, ab, o); }, 5, 11);
  // Causal: half of the n x n score matrix (plus the diagonal), QK^T and PV; with a window only
  // the band of w keys a row (the first w rows: a triangle).
  const double n = n_tokens, w = sh.window > 0 ? std::min<double>(sh.window, n) : n;
  const double pairs = w * (w + 1) / 2 + (n - w) * w;
  const double flops = 4.0 * pairs * hd * n_heads;
  b.row("attention prefill causal", std::to_string(n_tokens) + " tok " + sh.label(), us, 0, flops);
  if (sh.heads == kHeads && sh.kv_heads == kKvHeads && sh.d == kHeadDim && sh.window == 0)
    std::printf("|   -> 32 layers             | %-34s | %10.1f |                  |                    |\n",
                "attention share of a prefill", us * 32);
  // Each prefill kernel named (the row above is the backend's pick; SEAM_PREFILL_WGMMA).
  const cuda::AttentionParams p = cuda::make_attention_params(out, q, kc, vc, ab, o);
  for (const auto& [kernel_name, name] : {std::pair{cuda::PrefillKernel::mma_sync, "  prefill kernel mma.sync"},
                                           std::pair{cuda::PrefillKernel::wgmma, "  prefill kernel wgmma"}}) {
    const cuda::PrefillKernel kernel = kernel_name;  // a plain variable: lambdas capture it (C++17)
    if (kernel == cuda::PrefillKernel::wgmma && !cuda::flash_prefill_wgmma_supported(DType::bf16, int(hd))) {
      std::printf("| %-26s | %-34s | %10s |                  |                    |\n", name,
                  "(needs sm_90a and d 128)", "-");
      continue;
    }
    const double kernel_us =
        b.time_us([&](int) { cuda::launch_flash_prefill(p, DType::bf16, b.stream(), kernel); }, 5, 11);
    b.row(name, std::to_string(n_tokens) + " tok " + sh.label(), kernel_us, 0, flops);
  }
  b.release_all();
}

// The grouped MoE GEMMs at Qwen3-30B-A3B's expert shape (128 experts, top-8, hidden 2048,
// intermediate 768), uniform random routing: gate_up and down timed apart, each kernel family
// (wmma; wgmma 128 x 256 and 128 x 128, and the persistent warp-specialised 128 x 256, where they
// apply), after that family's align on the same routing.
void bench_moe_grouped(Bench& b, int n_tokens) {
  const int64_t E = 128, I = 768, H = 2048, k = 8, n = n_tokens, n_slots = n * k;
  Tensor gu = b.random(DType::bf16, {E, 2 * I, H}, 0.05f), dn = b.random(DType::bf16, {E, H, I}, 0.05f);
  Tensor x = b.random(DType::bf16, {n, H}), out = b.random(DType::bf16, {n, H});
  std::mt19937 rng(7);
  std::vector<int32_t> ids(static_cast<size_t>(n_slots));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> all(static_cast<size_t>(E));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::copy(all.begin(), all.begin() + k, ids.begin() + i * k);
  }
  Tensor ids_d = b.upload_i32(ids, {n, k});
  Tensor w = b.upload(std::vector<float>(size_t(n_slots), 1.f / float(k)), DType::f32, {n, k});
  const MoeScratch s{b.alloc(DType::bf16, {n_slots, I}), b.alloc(DType::bf16, {n_slots, H}),
                     b.alloc(DType::i32, {2 * E + 2 + n_slots})};
  const std::string shape = std::to_string(n_tokens) + " tok E128 top-8 H2048 I768";
  const double gu_flops = 2.0 * n_slots * 2 * I * H, dn_flops = 2.0 * n_slots * H * I;
  for (cuda::GroupedKernel kernel :
       {cuda::GroupedKernel::wmma, cuda::GroupedKernel::wgmma, cuda::GroupedKernel::wgmma_n128,
        cuda::GroupedKernel::wgmma_persistent}) {
    if (!cuda::grouped_kernel_applies(kernel, x, gu, dn, s)) continue;
    const std::string name = std::string("moe grouped ") + cuda::grouped_kernel_name(kernel);
    auto stages = [&](int which) {
      cuda::launch_moe_experts_grouped_with(kernel, out, x, gu, dn, ids_d, w, s, b.stream(), which);
    };
    stages(cuda::kGroupedAll);  // the align (index) and act the timed stages read
    // Rates in TFLOP/s always (bytes 0): the weights are read once, 0.8 + 0.4 GB, ~0.25 ms at 4.8 TB/s.
    const double gu_us = b.time_us([&](int) { stages(cuda::kGroupedGateUp); }, 5, 11);
    b.row(name + " gate_up", shape, gu_us, 0, gu_flops);
    const double dn_us = b.time_us([&](int) { stages(cuda::kGroupedDown); }, 5, 11);
    b.row(name + " down", shape, dn_us, 0, dn_flops);
    const double all_us = b.time_us([&](int) { stages(cuda::kGroupedAll); }, 5, 11);
    b.row(name + " layer (4 kernels)", shape, all_us, 0, gu_flops + dn_flops);
  }
  b.release_all();
}

// The skinny tensor-core MoE products at Qwen3-30B-A3B's decode (64 rows, 128 experts, top-8,
// hidden 2048, inter 768; uniform random routing: ~4 slots an expert, nearly every expert hit):
// the first version (skinny_mma) against the warp-streamed one (skinny_mma_stream), gate_up and
// down timed apart, rated by the weight bytes each reads once (805 MB and 403 MB: the floor is
// ~187 and ~94 us at 4.3 TB/s); then the whole op (two products and the combine).
void bench_moe_skinny(Bench& b, int n_tokens) {
  const int64_t E = 128, I = 768, H = 2048, k = 8, n = n_tokens, n_slots = n * k;
  Tensor gu = b.random(DType::bf16, {E, 2 * I, H}, 0.05f), dn = b.random(DType::bf16, {E, H, I}, 0.05f);
  Tensor x = b.random(DType::bf16, {n, H}), out = b.random(DType::bf16, {n, H});
  std::mt19937 rng(7);
  std::vector<int32_t> ids(static_cast<size_t>(n_slots));
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> all(static_cast<size_t>(E));
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::copy(all.begin(), all.begin() + k, ids.begin() + i * k);
  }
  Tensor ids_d = b.upload_i32(ids, {n, k});
  Tensor w = b.upload(std::vector<float>(size_t(n_slots), 1.f / float(k)), DType::f32, {n, k});
  const MoeScratch s{b.alloc(DType::bf16, {n_slots, I}), b.alloc(DType::bf16, {n_slots, H}),
                     b.alloc(DType::i32, {2 * E + 2 + n_slots})};
  const std::string shape = std::to_string(n_tokens) + " tok E128 top-8 H2048 I768";
  const double gu_bytes = double(E) * 2 * I * H * 2, dn_bytes = double(E) * H * I * 2;
  for (cuda::MoePath path : {cuda::MoePath::skinny_mma, cuda::MoePath::skinny_mma_stream}) {
    if (!cuda::moe_path_applies(path, x, gu, dn, ids_d, s)) continue;
    const std::string name = std::string("moe ") + cuda::moe_path_name(path);
    auto stages = [&](int which) {
      if (path == cuda::MoePath::skinny_mma)
        cuda::launch_moe_skinny_mma_stages(x, gu, dn, ids_d, s, which, b.stream());
      else
        cuda::launch_moe_skinny_mma_stream_stages(x, gu, dn, ids_d, s, which, b.stream());
    };
    stages(3);  // act for the timed down
    const double gu_us = b.time_us([&](int) { stages(1); }, 5, 11);
    b.row(name + " gate_up", shape, gu_us, gu_bytes, 0);
    const double dn_us = b.time_us([&](int) { stages(2); }, 5, 11);
    b.row(name + " down", shape, dn_us, dn_bytes, 0);
    const double all_us = b.time_us(
        [&](int) { cuda::launch_moe_experts_path(path, out, x, gu, dn, ids_d, w, s, b.stream()); }, 5, 11);
    b.row(name + " layer (3 kernels)", shape, all_us, gu_bytes + dn_bytes, 0);
  }
  // skinny_mma_stream's tuning variants (SEAM_MOE_STREAM_VARIANT; moe_skinny_mma_stream.cu's
  // StreamCfg), each launched directly: gate_up, down and the layer (with the combine) a row.
  if (cuda::moe_path_applies(cuda::MoePath::skinny_mma_stream, x, gu, dn, ids_d, s)) {
    for (int v = 0; v < cuda::moe_skinny_mma_stream_variants(); ++v) {
      const std::string name = std::string("  v") + std::to_string(v) + " " +
                               cuda::moe_skinny_mma_stream_variant_name(v);
      auto stages = [&](int which) { cuda::launch_moe_skinny_mma_stream_stages(x, gu, dn, ids_d, s, which, b.stream(), v); };
      stages(3);
      const double gu_us = b.time_us([&](int) { stages(1); }, 5, 11);
      b.row(name + " gate_up", shape, gu_us, gu_bytes, 0);
      const double dn_us = b.time_us([&](int) { stages(2); }, 5, 11);
      b.row(name + " down", shape, dn_us, dn_bytes, 0);
      const double all_us = b.time_us(
          [&](int) { cuda::launch_moe_experts_skinny_mma_stream(out, x, gu, dn, ids_d, w, s, b.stream(), v); }, 5, 11);
      b.row(name + " layer", shape, all_us, gu_bytes + dn_bytes, 0);
    }
  }
  b.release_all();
}

// The batch-1 MoE paths (moe_experts.h: gathered, gathered_stream, gathered_gemv) at one model's
// expert shape, bf16, each call routed to a different set of k experts (kRoutings disjoint sets in
// turn: no call reads the experts the one before it read from L2). Rates count the chosen
// experts' weights once: k x (2 I H + H I) x 2 bytes a call. gathered_gemv's kernels are also
// timed apart: its gate_up and down GEMVs, and the combine.
void bench_moe_batch1(Bench& b, const char* model, int64_t E, int64_t I, int64_t H, int64_t k) {
  constexpr int kRoutings = 4;
  Tensor gu = b.random(DType::bf16, {E, 2 * I, H}, 0.05f), dn = b.random(DType::bf16, {E, H, I}, 0.05f);
  Tensor x = b.random(DType::bf16, {1, H}), out = b.random(DType::bf16, {1, H});
  std::vector<Tensor> ids;
  for (int r = 0; r < kRoutings; ++r) {
    std::vector<int32_t> v(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) v[size_t(j)] = int32_t((r * k + j) % E);
    ids.push_back(b.upload_i32(v, {1, k}));
  }
  Tensor w = b.upload(std::vector<float>(size_t(k), 1.f / float(k)), DType::f32, {1, k});
  // As MoeBuffers at a 256-token step: expert_out has room for the float32 expert outputs.
  const MoeScratch s{b.alloc(DType::bf16, {256 * k, I}), b.alloc(DType::bf16, {256 * k, H}),
                     b.alloc(DType::i32, {2 * E + 2 + 256 * k})};
  const std::string shape = std::string(model) + " 1 tok E" + std::to_string(E) + " top-" + std::to_string(k);
  const double gu_bytes = double(k) * 2 * I * H * 2, dn_bytes = double(k) * H * I * 2;
  for (cuda::MoePath path : {cuda::MoePath::gathered, cuda::MoePath::gathered_stream, cuda::MoePath::gathered_gemv}) {
    if (!cuda::moe_path_applies(path, x, gu, dn, ids[0], s)) continue;
    const double us = b.time_us(
        [&](int i) {
          cuda::launch_moe_experts_path(path, out, x, gu, dn, ids[size_t(i % kRoutings)], w, s, b.stream());
        },
        8, 11);
    b.row(std::string("moe ") + cuda::moe_path_name(path), shape, us, gu_bytes + dn_bytes, 0);
  }
  if (cuda::moe_path_applies(cuda::MoePath::gathered_gemv, x, gu, dn, ids[0], s)) {
    const Tensor act = s.act.rows(k), y(s.expert_out.data, DType::f32, Device::cuda, {k, H});
    const double gu_us = b.time_us(
        [&](int i) { cuda::launch_gemv_experts(act, x, false, gu, ids[size_t(i % kRoutings)], true, b.stream()); }, 8,
        11);
    b.row("moe gathered_gemv gate_up", shape, gu_us, gu_bytes, 0);
    const double dn_us = b.time_us(
        [&](int i) { cuda::launch_gemv_experts(y, act, true, dn, ids[size_t(i % kRoutings)], false, b.stream()); }, 8,
        11);
    b.row("moe gathered_gemv down", shape, dn_us, dn_bytes, 0);
    const double cb_us = b.time_us([&](int) { cuda::launch_moe_combine(out, y, w, b.stream()); }, 8, 11);
    b.row("moe gathered_gemv combine", shape, cb_us, double(k) * H * 4 + 2.0 * H * 2, 0);
  }
  b.release_all();
}

void bench_elementwise(Bench& b) {
  const int64_t n = 4096;
  {
    const int copies = 4;
    std::vector<Tensor> xs;
    for (int c = 0; c < copies; ++c) xs.push_back(b.random(DType::bf16, {n, kHidden}));
    Tensor w = b.random(DType::bf16, {kHidden}), out = b.alloc(DType::bf16, {n, kHidden});
    const double us = b.time_us([&](int i) { b.gpu().rms_norm(out, xs[size_t(i % copies)], w, 1e-5f); });
    b.row("rms_norm", "4096 x 4096 bf16", us, 2.0 * n * kHidden * 2, 0);
    b.release_all();
  }
  {
    Tensor qkv = b.random(DType::bf16, {n, kQkv});
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), 0);
    Tensor pos_d = b.upload_i32(pos, {n});
    Tensor freq = b.upload(rope_inv_freq(kHeadDim), DType::f32, {kHeadDim / 2});
    Tensor q = qkv.slice_cols(0, kHeads * kHeadDim).unflatten_last(kHeads, kHeadDim);
    Tensor k = qkv.slice_cols(kHeads * kHeadDim, kKvHeads * kHeadDim).unflatten_last(kKvHeads, kHeadDim);
    const double us = b.time_us([&](int) { b.gpu().rope(q, k, pos_d, freq); });
    b.row("rope (q,k in qkv)", "4096 tok 32+8 heads x128", us, 2.0 * n * (kHeads + kKvHeads) * kHeadDim * 2, 0);
    Tensor kc = b.alloc(DType::bf16, {2 * n, kKvHeads, kHeadDim}), vc = b.alloc(DType::bf16, {2 * n, kKvHeads, kHeadDim});
    Tensor v = qkv.slice_cols((kHeads + kKvHeads) * kHeadDim, kKvHeads * kHeadDim).unflatten_last(kKvHeads, kHeadDim);
    const double us2 = b.time_us([&](int) { b.gpu().store_kv(kc, vc, k, v, pos_d); });
    b.row("store_kv", "4096 tok 8 kv heads x128", us2, 4.0 * n * kKvHeads * kHeadDim * 2, 0);
    b.release_all();
  }
  {
    Tensor gu = b.random(DType::bf16, {n, 2 * kInter}), out = b.alloc(DType::bf16, {n, kInter});
    const double us = b.time_us([&](int) { b.gpu().silu_mul(out, gu); });
    b.row("silu_mul", "4096 x 14336 bf16", us, 3.0 * n * kInter * 2, 0);
    b.release_all();
  }
}

void bench_sampling(Bench& b, int n, bool greedy) {
  Tensor logits0 = b.random(DType::f32, {n, kVocab}, 8.f);
  Tensor logits = b.alloc(DType::f32, {n, kVocab});
  Tensor out = b.alloc(DType::i32, {n});
  std::vector<float> temp(static_cast<size_t>(n)), top_p(static_cast<size_t>(n)), min_p(size_t(n), 0.f);
  std::vector<int32_t> top_k(static_cast<size_t>(n)), step(static_cast<size_t>(n));
  std::vector<int64_t> seed(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {  // a mix: plain temperature, top-k 50, top-p 0.9, min-p
    temp[size_t(i)] = greedy ? 0.f : 0.8f;
    top_k[size_t(i)] = i % 4 == 1 ? 50 : 0;
    top_p[size_t(i)] = i % 4 == 2 ? 0.9f : 1.f;
    min_p[size_t(i)] = i % 4 == 3 ? 0.05f : 0.f;
    seed[size_t(i)] = 1000 + i;
    step[size_t(i)] = i;
  }
  SamplingBatch s;
  s.n = n;
  s.temperature = b.upload(temp, DType::f32, {n});
  s.top_k = b.upload(top_k, DType::i32, {n});
  s.top_p = b.upload(top_p, DType::f32, {n});
  s.min_p = b.upload(min_p, DType::f32, {n});
  s.seed = b.upload(seed, DType::i64, {n});
  s.step = b.upload(step, DType::i32, {n});
  // sample overwrites its logits with probabilities: restore them before each call and
  // subtract the restore copy's own time.
  const size_t bytes = size_t(n) * kVocab * 4;
  const double copy_us = b.time_us([&](int) { b.gpu().copy_d2d(logits.data, logits0.data, bytes); });
  const double both_us = b.time_us([&](int) {
    b.gpu().copy_d2d(logits.data, logits0.data, bytes);
    b.gpu().sample(out, logits, s);
  });
  b.row(std::string("sample ") + (greedy ? "greedy" : "top-k/p/min-p mix"),
        std::to_string(n) + " x " + std::to_string(kVocab) + " f32", both_us - copy_us, double(bytes), 0);
  b.release_all();
}

int run(int argc, char** argv) {
  // --quick: fewer decode-attention and GEMM shapes; --gemv: only the batch-1 GEMM rows;
  // --small-m: only the projections at 2-32 rows, skinny GEMM and cuBLASLt; --moe: only the
  // MoE rows (batch-1 paths, grouped GEMMs, the skinny decode kernels); --fp8: only the FP8 rows
  // (the batch-1 GEMV on both inner loops, then the GEMM: wgmma against the cuBLASLt route).
  const bool moe_only = argc > 1 && std::strcmp(argv[1], "--moe") == 0;
  const bool fp8_only = argc > 1 && std::strcmp(argv[1], "--fp8") == 0;
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool gemv_only = argc > 1 && std::strcmp(argv[1], "--gemv") == 0;
  const bool small_m = argc > 1 && std::strcmp(argv[1], "--small-m") == 0;
  std::string why;
  if (!cuda_device_present(&why)) {
    std::printf("seam_kernel_bench: no GPU (%s)\n", why.c_str());
    return 0;
  }
  Bench b;
  std::printf("seam kernel bench on %s (Llama-3.1-8B shapes, bf16; ceilings: copy %.1f TB/s, GEMM %.0f TFLOP/s)\n\n",
              b.gpu().name().c_str(), kCopyTBs, kGemmTFlops);
  std::printf("| %-26s | %-34s | %10s | %-16s | %-18s |\n", "op", "shape", "time (us)", "achieved", "of ceiling");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(36, '-').c_str(),
              std::string(12, '-').c_str(), std::string(18, '-').c_str(), std::string(20, '-').c_str());
  if (fp8_only) {
    bench_fp8_gemm(b);
    return 0;
  }
  if (gemv_only || small_m) {
    bench_gemms(b, gemv_only ? GemmRows::batch1 : GemmRows::small_m);
    return 0;
  }
  // One decode token on the batch-1 paths: Mixtral-8x7B (top-2 of 8, hidden 4096, inter 14336)
  // and Qwen3-30B-A3B (top-8 of 128, hidden 2048, inter 768).
  bench_moe_batch1(b, "Mixtral-8x7B", 8, 14336, 4096, 2);
  bench_moe_batch1(b, "Qwen3-30B-A3B", 128, 768, 2048, 8);
  // 4,096: the prefill target; 512: a small prefill chunk (~32 rows an expert).
  for (int n : {4096, 512}) bench_moe_grouped(b, n);
  // 64: Qwen3-30B-A3B's batch-64 decode on the skinny tensor-core path, old against new.
  bench_moe_skinny(b, 64);
  if (moe_only) return 0;
  // Batch 1 at the contexts of the decode benchmarks (latency-bound) and of serving's 1,024-token prompts.
  for (int ctx : {160, 1152}) bench_decode_attention(b, 1, ctx, false);
  for (int batch : {1, 8, 64}) bench_decode_attention(b, batch, 32768, false);
  bench_decode_attention(b, 8, 32768, true);
  AttnShape fp8_kv;
  fp8_kv.kv_fp8 = true;
  for (int batch : {1, 8, 64}) bench_decode_attention(b, batch, 32768, false, fp8_kv);  // half the bytes
  if (!quick) bench_decode_attention(b, 64, 2048, false);
  // 4,096: the prefill target; 1,024 and 512: either side of the length at which the backend
  // switches from the mma.sync to the wgmma kernel (prefill_kernel_choice.h).
  for (int n : {4096, 1024, 512}) bench_prefill_attention(b, n);
  // Issue 24's families: Phi-3.5-mini (32/32 x 96), gemma-2-9b (16/8 x 256, window 4,096 on
  // every other layer), gemma-3-4b (8/4 x 256, window 1,024 on five of six layers), Mistral-7B
  // (32/8 x 128, window 4,096).
  const AttnShape phi{32, 32, 96, 0}, gemma2{16, 8, 256, 0}, gemma2_w{16, 8, 256, 4096}, gemma3{8, 4, 256, 0},
      gemma3_w{8, 4, 256, 1024}, mistral_w{32, 8, 128, 4096};
  for (const AttnShape& sh : {phi, gemma2, gemma2_w, gemma3_w}) {
    for (int batch : {1, 64}) bench_decode_attention(b, batch, 8192, false, sh);
    bench_decode_attention(b, 1, 1152, false, sh);
  }
  bench_decode_attention(b, 8, 32768, false, mistral_w);
  for (const AttnShape& sh : {phi, gemma2, gemma3, gemma3_w, mistral_w}) bench_prefill_attention(b, 4096, sh);
  if (!quick) bench_prefill_attention(b, 16384, gemma3_w), bench_prefill_attention(b, 16384, gemma3);
  bench_gemms(b, quick ? GemmRows::quick : GemmRows::all);
  if (!quick) bench_fp8_gemm(b);
  bench_elementwise(b);
  for (int n : {1, 64}) {
    bench_sampling(b, n, true);
    bench_sampling(b, n, false);
  }
  return 0;
}

}  // namespace
}  // namespace seam

int main(int argc, char** argv) {
  try {
    return seam::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seam_kernel_bench: %s\n", e.what());
    return 1;
  }
}
