// CublasLtGemm: out = x @ w^T (+ bias) through cuBLASLt, for `linear`.
//
// Capture-safe: the 32 MiB workspace is allocated once here and passed explicitly
// to every matmul, so nothing is allocated on the device in the step loop (a
// plan's first use creates host-side descriptors and queries the heuristic; both
// are host work and are legal during stream capture).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>

#include "core/tensor.h"

namespace seam::cuda {

class CublasLtGemm {
 public:
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  CublasLtGemm();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // out [n, n_out] = x [n, n_in] @ w [n_out, n_in]^T (+ bias [n_out]).
  // x, w: f32, f16 or bf16 (one dtype); out: that dtype or f32 (logits); bias: w's or out's dtype.
  // bf16/f16 accumulate in fp32; f32 uses CUBLAS_COMPUTE_32F (no TF32).
  // Rows of x and out may be strided (unit column stride); w is contiguous.
  // accumulate: out += x @ w^T (+ bias) in place (beta = 1, C = D = out; the algorithm does not
  // depend on beta, so both modes share a plan).
  void run(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, cudaStream_t stream,
           bool accumulate = false);

 private:
  // Everything that selects a plan: sizes, leading dims, types, pointer alignments, bias mode.
  using Key = std::array<int64_t, 12>;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool fused_bias = false;  // bias applied by the epilogue; else by a separate kernel
  };
  Plan& plan_for(const Key& key, const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias);
  Plan make_plan(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, bool fuse_bias,
                 bool* found);
  static void destroy(Plan& p);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;  // [kWorkspaceBytes]
  std::map<Key, Plan> plans_;
};

}  // namespace seam::cuda
