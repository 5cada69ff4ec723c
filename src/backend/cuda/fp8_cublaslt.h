// cuBLASLt E4M3 GEMMs for the FP8 linear (backend.h "FP8 linear") on Hopper, from the
// activations fp8_quantize.cu produced. out [n, out] row-major is cuBLASLt's column-major
// D [out, n] = op(A) op(B), A = W ([out, in] row-major, op T), B = codes ([n, in], op N): the
// TN layout FP8 needs. Scales by the scheme:
//   per-tensor W, static x   A/B_SCALE_MODE scalar (A_SCALE_POINTER = w_scale, B = input_scale)
//   per-channel W, per-token CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F on both: w_scale [out]
//                            (A's outer dim m) and the token scales [n] (B's outer dim n)
// Bias goes through the BIAS epilogue, accumulate through beta = 1 with C = D = out.
// Anything else (128-blocks: BLK128x128 needs the compact [ceil(out/128), ceil(in/128)] scales;
// per-tensor W with per-token x; shapes cuBLASLt has no algorithm for) returns false and the
// caller runs the CUDA-core kernel (fp8_gemm.h). A plan (descriptors + algorithm) is made once
// per shape, outside the step loop's hot path, and cached; "no algorithm" is cached too.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <tuple>

#include "backend/backend.h"

namespace seam::cuda {

class Fp8CublasLt {
 public:
  Fp8CublasLt() = default;
  ~Fp8CublasLt();
  Fp8CublasLt(const Fp8CublasLt&) = delete;
  Fp8CublasLt& operator=(const Fp8CublasLt&) = delete;

  // Runs the product if cuBLASLt can; false (nothing enqueued) if not. `capturing`: no plan
  // may be created then (a shape first seen inside a capture falls back).
  bool run(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w, const Tensor& bias,
           bool accumulate, bool capturing, cudaStream_t stream);

 private:
  struct Plan {
    bool ok = false;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;
  };
  // (n, out, in, out ld, out dtype, weight scheme, bias, accumulate)
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, bool, bool>;
  Plan make_plan(const Key& k, const Tensor& out, const Fp8Weight& w, const Tensor& bias, bool accumulate);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  std::map<Key, Plan> plans_;
};

}  // namespace seam::cuda
