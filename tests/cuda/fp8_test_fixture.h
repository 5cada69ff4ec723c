// The CUDA FP8 linear tests' fixtures (cuda_fp8_test.cpp, cuda_fp8_gemv_test.cpp): the CPU and CUDA
// backends, FP8 weights of each scheme made on the host, inputs rounded to the activation dtype,
// and the check of one case against the CPU reference; CudaFp8Gemv builds its backend with one
// SEAM_FP8_GEMV inner loop.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "backend/cpu/fp8_cpu.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gated_act_quantize.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemv.h"
#include "backend/cuda/fp8_quantize.h"
#include "backend/cuda/fp8_rms_norm_quantize.h"
#include "core/fp8.h"
#include "cuda_test_util.h"
#include "model/fp8_linear.h"

namespace seam::test {

// float32 outputs: the CUDA-core kernels differ from the reference by the order of float32 sums
// only; a tensor-core product (cuBLASLt E4M3) by Hopper's FP8 accumulation, whose partial sums
// keep ~13 mantissa bits between cuBLASLt's float32 promotions: 5.4e-4 of max|ref| measured on
// the H200 at K = 256 (SCALAR_32F, a50493f). That is the format's tensor-core agreement; the bound
// below leaves room for it to grow linearly in K up to the tests' K = 1,024 (2.2e-3), and is
// still far below a wrong scale or row (errors of order max|ref|). The f16 / bf16 bounds (one
// output rounding, 2^-11 / 2^-8) are above it and stay as they are.
constexpr Tolerance kExactF32{1e-4, 1e-5};
constexpr Tolerance kTensorCoreF32{1e-3, 4e-3};

struct Case {
  Fp8WeightScheme w;
  Fp8ActScheme act;
  int64_t n, in, out;
  float ub = 0.f;
  bool bias = false, accumulate = false;
  // block128: scales uniform over each 128-row block, with the compact copy
  // (Fp8Weight::w_scale_blocks) the cuBLASLt BLK128x128 mode reads.
  bool blocks = false;
};

class CudaFp8 : public CudaTest {
 protected:
  // An FP8 weight on both backends: random finite codes and positive scales.
  struct Weights {
    std::vector<uint8_t> codes;
    std::vector<float> scales;
    std::vector<float> blocks;  // compact 128x128 block scales (Case::blocks)
    float input_scale = 0.02f;
    Fp8Weight cpu, gpu;
  };
  void make_weights(const Case& c, Weights& W) {
    W.codes.resize(size_t(c.out * c.in));
    for (auto& b : W.codes) {
      do b = uint8_t(rng());
      while ((b & 0x7f) == 0x7f);
    }
    const int64_t n_kb = (c.in + 127) / 128;
    const int64_t n_s = c.w == Fp8WeightScheme::per_tensor    ? 1
                        : c.w == Fp8WeightScheme::per_channel ? c.out
                                                              : c.out * n_kb;
    std::uniform_real_distribution<float> u(0.001f, 0.02f);
    W.scales.resize(size_t(n_s));
    for (auto& s : W.scales) s = u(rng);
    if (c.blocks) {  // one row of scales per 128-row block, as a checkpoint's 128x128 blocks
      for (int64_t o = 0; o < c.out; ++o)
        std::copy_n(W.scales.begin() + (o / 128 * 128) * n_kb, n_kb, W.scales.begin() + o * n_kb);
      W.blocks = compact_block_scales(W.scales.data(), c.out, n_kb);
      EXPECT_FALSE(W.blocks.empty());
    }
    for (Fp8Weight* f : {&W.cpu, &W.gpu}) {
      f->w_scheme = c.w;
      f->act = c.act;
      f->act_amax_ub = c.ub;
    }
    W.cpu.w = Tensor(W.codes.data(), DType::fp8_e4m3, Device::cpu, {c.out, c.in});
    W.cpu.w_scale = c.w == Fp8WeightScheme::block128 ? Tensor(W.scales.data(), DType::f32, Device::cpu, {c.out, n_kb})
                                                     : Tensor(W.scales.data(), DType::f32, Device::cpu, {n_s});
    void* wd = gpu->alloc(W.codes.size());
    owned_.push_back(wd);
    gpu->copy_h2d(wd, W.codes.data(), W.codes.size());
    W.gpu.w = Tensor(wd, DType::fp8_e4m3, Device::cuda, {c.out, c.in});
    W.gpu.w_scale = c.w == Fp8WeightScheme::block128 ? upload(W.scales, DType::f32, {c.out, n_kb})
                                                     : upload(W.scales, DType::f32, {n_s});
    if (c.blocks) W.gpu.w_scale_blocks = upload(W.blocks, DType::f32, {(c.out + 127) / 128, n_kb});
    if (c.act == Fp8ActScheme::static_per_tensor) {
      W.cpu.input_scale = Tensor(&W.input_scale, DType::f32, Device::cpu, {1});
      W.gpu.input_scale = upload({W.input_scale}, DType::f32, {1});
    }
    gpu->synchronize();
  }
  // x [n, in] with an all-zero row 1 and an outlier, rounded to `t` so both backends see the same values.
  std::vector<float> make_x(const Case& c, DType t) {
    std::vector<float> x = random_normal(size_t(c.n * c.in), rng, 2.f);
    for (int64_t k = 0; k < c.in && c.n > 1; ++k) x[size_t(c.in + k)] = 0.f;
    if (c.n > 2) x[size_t(2 * c.in + 3)] = 900.f;
    return round_to(x, t);
  }
  // The op on the GPU (gpu_op, default the backend's linear_fp8) against the CPU reference for
  // one case: x as a strided view (every other row of a [2n, in] buffer), random out0 / bias.
  // f32: summation order only (the GEMV's FMAs are float32; cuBLASLt promotes its FP8 partial
  // sums to float32, so its error is a few float32 roundings of partial sums); f16/bf16: one
  // rounding of the output (and of out0/bias, which both sides share).
  using GpuOp = std::function<void(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate)>;
  void check(const Case& c, DType t, const GpuOp& gpu_op = {}, Tolerance f32 = kExactF32) {
    SCOPED_TRACE(std::string(short_name(t)) + " " + fp8_weight_scheme_name(c.w) + " / " + fp8_act_scheme_name(c.act) +
                 " n " + std::to_string(c.n) + " in " + std::to_string(c.in) + " out " + std::to_string(c.out) +
                 (c.blocks ? " compact blocks" : ""));
    Weights W;
    make_weights(c, W);
    const std::vector<float> x = make_x(c, t);
    std::vector<float> bias = round_to(random_normal(size_t(c.out), rng), t);
    std::vector<float> out0 = round_to(random_normal(size_t(c.n * c.out), rng), t);
    std::vector<float> xc = x, bc = bias, oc = out0;
    cpu.linear_fp8(host_view(oc, {c.n, c.out}), host_view(xc, {c.n, c.in}), W.cpu,
                   c.bias ? host_view(bc, {c.out}) : Tensor(), c.accumulate);
    std::vector<float> xs(size_t(2 * c.n * c.in), 0.f);
    for (int64_t i = 0; i < c.n; ++i)
      std::copy(x.begin() + i * c.in, x.begin() + (i + 1) * c.in, xs.begin() + 2 * i * c.in);
    Tensor xd = upload(xs, t, {c.n, 2 * c.in}).slice_cols(0, c.in);
    Tensor od = upload(out0, t, {c.n, c.out});
    Tensor bd = c.bias ? upload(bias, t, {c.out}) : Tensor();
    if (gpu_op)
      gpu_op(od, xd, W.gpu, bd, c.accumulate);
    else
      gpu->linear_fp8(od, xd, W.gpu, bd, c.accumulate);
    expect_close(download(od), oc, tolerance_for(t, f32), "linear_fp8");
  }
  // More row tiles than the persistent GEMV's grid (fp8_gemv.cu: at most its resident blocks of
  // 256 threads, each staging `staged_bytes` of x) can hold on this GPU, whatever its occupancy:
  // each block then computes several tiles.
  int64_t tiles_past_grid(int64_t staged_bytes) {
    int dev = 0;
    cudaDeviceProp p{};
    EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
    EXPECT_EQ(cudaGetDeviceProperties(&p, dev), cudaSuccess);
    const int64_t per_sm =
        std::min<int64_t>(p.maxThreadsPerMultiProcessor / 256, int64_t(p.sharedMemPerMultiprocessor) / staged_bytes);
    return int64_t(p.multiProcessorCount) * std::max<int64_t>(per_sm, 1) + 3;
  }

  // Compute capability 8.9+: where SEAM_FP8_GEMV defaults to the tensor-core GEMV (fp8_gemv.h).
  static bool e4m3_tensor_cores() {
    int dev = 0;
    cudaDeviceProp p{};
    EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
    EXPECT_EQ(cudaGetDeviceProperties(&p, dev), cudaSuccess);
    return p.major * 10 + p.minor >= 89;
  }

  void TearDown() override {
    if (gpu) {
      gpu->synchronize();
      for (void* p : owned_) gpu->release(p);
    }
    CudaTest::TearDown();
  }
  std::vector<void*> owned_;
};

// The GEMV tests run on both inner loops (SEAM_FP8_GEMV, fp8_gemv.h): the backend `gpu` is built
// with the parameter's environment, and launch_fp8_gemv called directly takes the same kernel.
// mma: float32 outputs at the tensor-core bound (its 128-k partial sums), every fusion still equal
// to its decomposition bit for bit (the decomposition's GEMV is the same kernel).
// Parameter: "fma" or "mma".
class CudaFp8Gemv : public CudaFp8, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    const bool mma = kernel() == cuda::Fp8GemvKernel::mma;
    if (mma && cuda_device_present(nullptr) && !e4m3_tensor_cores()) GTEST_SKIP() << "no E4M3 tensor cores";
    setenv("SEAM_FP8_GEMV", mma ? "mma" : "fma", 1);
    CudaFp8::SetUp();
    unsetenv("SEAM_FP8_GEMV");
  }
  cuda::Fp8GemvKernel kernel() const {
    return std::string(GetParam()) == "mma" ? cuda::Fp8GemvKernel::mma : cuda::Fp8GemvKernel::fma;
  }
  void gemv(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool acc, const cuda::Fp8GemvFusion& f = {}) {
    cuda::launch_fp8_gemv(out, x, w, bias, acc, stream(), f, kernel());
  }
  Tolerance f32_bound() const { return kernel() == cuda::Fp8GemvKernel::mma ? kTensorCoreF32 : kExactF32; }
};

}  // namespace seam::test
