// cuBLASLt E4M3 GEMMs for the FP8 linear (backend.h "FP8 linear") on Hopper, from the
// activations fp8_quantize.cu produced. out [n, out] row-major is cuBLASLt's column-major
// D [out, n] = op(A) op(B), A = W ([out, in] row-major, op T), B = codes ([n, in], op N): the
// TN layout FP8 needs. Scale modes by the weight scheme (Mode):
//   (scalar: SCALAR_32F on both -- per-tensor W, static x -- is not used: on the H200 it missed
//           the float32 bound that OUTER_VEC_32F met, so per-tensor weights load per-channel)
//   outer   per-channel W, per-token or static x: OUTER_VEC_32F on both, w_scale [out] (A's
//           outer dim m) and the token scales [n] (B's outer dim n; a static scale is written
//           for every row by the quantize kernel)
//   block   128x128 W blocks, 1x128 x groups: A BLK128x128_32F from w_scale_blocks
//           ([ceil(out/128), ceil(in/128)] row-major), B VEC128_32F from the group scales
//           [ceil(in/128), n] (token fastest, fp8_quantize.h) -- the layouts PyTorch's
//           _scaled_mm passes cuBLASLt for DeepSeek-style blockwise scaling on sm_90
// Bias goes through the BIAS epilogue (or, where a mode has no algorithm with it, bias_add after
// the product), accumulate through beta = 1 with C = D = out.
// Anything else (per-tensor W -- the loader makes those per-channel --,
// block weights without compactable scales or with ceil(in/128) % 4 != 0, shapes cuBLASLt has
// no algorithm for) returns false and the caller runs the CUDA-core kernel (fp8_gemm.h). A
// plan (descriptors + algorithm) is made once per shape, outside capture, and cached; "no
// algorithm" is cached too.
// Numerics: Hopper's FP8 tensor cores accumulate with a reduced (~13-bit) mantissa inside an
// MMA; without CUBLASLT_MATMUL_DESC_FAST_ACCUM (not set here) cuBLASLt promotes the partial
// sums to float32 periodically.
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
  enum class Mode { none, outer, block };
  static Mode mode_for(const Fp8Weight& w);
  // (n, out, in, out ld, out dtype, mode, bias, accumulate)
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, bool, bool>;
  Plan make_plan(const Key& k, const Tensor& out, const Fp8Weight& w, const Tensor& bias, bool accumulate);
  // The cached plan of k (made now unless capturing), or null when there is none / no algorithm.
  Plan* plan_for(const Key& k, const Tensor& out, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                 bool capturing);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  std::map<Key, Plan> plans_;
};

}  // namespace seam::cuda
