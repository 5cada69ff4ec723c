// cuBLASLt E4M3 GEMMs for the FP8 linear (backend.h "FP8 linear") on Hopper, from the
// activations fp8_quantize.cu produced. out [n, out] row-major is cuBLASLt's column-major
// D [out, n] = op(A) op(B), A = W ([out, in] row-major, op T), B = codes ([n, in], op N): the
// TN layout FP8 needs. Routes (Route), by the weight scheme:
//   outer      per-channel W, per-token or static x: OUTER_VEC_32F on both, w_scale [out] (A's
//              outer dim m) and the token scales [n] (B's outer dim n; a static scale is written
//              for every row by the quantize kernel)
//   block      128x128 W blocks, 1x128 x groups: A BLK128x128_32F from w_scale_blocks
//              ([ceil(out/128), ceil(in/128)] row-major), B VEC128_32F from the group scales
//              [ceil(in/128), n] (token fastest, fp8_quantize.h) -- the layouts PyTorch's
//              _scaled_mm passes cuBLASLt for DeepSeek-style blockwise scaling
//   unscaled   per-channel W where `outer` has no algorithm: the E4M3 product without scales
//              into float32 sums (a scratch of at most kMaxSumsBytes; longer batches run in
//              row chunks), then fp8_scale_epilogue.cu applies xs[i] * ws[o], the bias and
//              the accumulate in fp8_gemm.cu's arithmetic
// On the H200 (CUDA 13.0, driver 580) cuBLASLt offers no algorithm for OUTER_VEC_32F nor for
// BLK128x128_32F x VEC128_32F (cuda_fp8_test at b9217ad: those modes are Blackwell's), so
// per-channel weights run `unscaled` there and block weights the CUDA-core kernel. (SCALAR_32F,
// per-tensor W with a static x, is not used: per-tensor weights load per-channel.)
// Bias goes through the BIAS epilogue (or, where a mode has no algorithm with it, bias_add after
// the product), accumulate through beta = 1 with C = D = out.
// Anything else (per-tensor W -- the loader makes those per-channel --, block weights without
// compactable scales or with ceil(in/128) % 4 != 0, shapes cuBLASLt has no algorithm for)
// returns false and the caller runs the CUDA-core kernel (fp8_gemm.h). A plan (descriptors +
// algorithm) is made once per shape, outside capture, and cached; "no algorithm" is cached too.
// Numerics: Hopper's FP8 tensor cores accumulate with a reduced (~13-bit) mantissa inside an
// MMA. Promoted (fast_accum false) cuBLASLt adds the partial sums into float32 periodically; fast
// (CUBLASLT_MATMUL_DESC_FAST_ACCUM, the default under SEAM_FP8_ACCUM=fast, as vLLM's CUTLASS FP8
// GEMMs and the warp-specialised kernel's fast accumulation) the tensor cores sum the whole K.
// cuda_fp8_test holds both to its tensor-core bound at K <= 1,024 and cuda_fp8_gemm_wgmma_test to
// the fast bound (the promoted bound per 128-wide K block, summed) at K 4,096 and 14,336; exactly
// representable values are bit-exact either way.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "backend/backend.h"

namespace seam::cuda {

class Fp8CublasLt {
 public:
  enum class Route { outer, block, unscaled };
  static const char* route_name(Route r);

  // fast_accum: CUBLASLT_MATMUL_DESC_FAST_ACCUM on every plan (above). The default constructor
  // takes SEAM_FP8_ACCUM (fast unless promoted: fp8_gemm_wgmma_ws.h), as the backend does.
  Fp8CublasLt();
  explicit Fp8CublasLt(bool fast_accum) : fast_accum_(fast_accum) {}
  bool fast_accum() const { return fast_accum_; }
  ~Fp8CublasLt();
  Fp8CublasLt(const Fp8CublasLt&) = delete;
  Fp8CublasLt& operator=(const Fp8CublasLt&) = delete;

  // Runs the product if cuBLASLt can (per-channel: outer, else unscaled; block: block); false
  // (nothing enqueued) if not. `capturing`: no plan may be made nor scratch grown then (a
  // shape first seen inside a capture falls back).
  bool run(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w, const Tensor& bias,
           bool accumulate, bool capturing, cudaStream_t stream);
  // One route alone (the tests): false, nothing enqueued, when the scheme does not take it or
  // cuBLASLt has no algorithm for it at this shape on this GPU.
  bool run_route(Route r, const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                 const Tensor& bias, bool accumulate, bool capturing, cudaStream_t stream);
  // Whether cuBLASLt has an algorithm for route r's product (without bias) of n rows of w into
  // `out_dtype` on this GPU: the capability query (the plan is made and cached).
  bool has_algorithm(Route r, int64_t n, const Fp8Weight& w, DType out_dtype);

  // The unscaled route's product alone, for a consumer that applies the scales itself.
  // sums_ready: the run of n rows of w (the rows of a chunk, the plans of a full and of the last
  // chunk, the sums scratch), made now or found (inside a capture only what was made before);
  // ready() false where the scheme does not take the route or any piece is missing. run_sums then
  // runs it on codes ([n, in]): for each row chunk (at most kMaxSumsBytes of sums) the E4M3 product
  // into the sums scratch ([m, out] float32, contiguous), then each(r0, m, sums) enqueues what
  // reads them, before the next chunk overwrites the scratch (stream order).
  struct Plan {  // a cached cuBLASLt plan (public for SumsRun; made and used only here)
    bool ok = false;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    size_t workspace = 0;
  };
  struct SumsRun {
    bool ready() const { return takes && (n == 0 || sums != nullptr); }
    bool takes = false;  // the scheme takes the unscaled route
    int64_t n = 0, chunk = 0;
    Plan* first = nullptr;
    Plan* last = nullptr;
    float* sums = nullptr;
  };
  SumsRun sums_ready(int64_t n, const Fp8Weight& w, bool capturing);
  void run_sums(const SumsRun& run, const Tensor& codes, const Fp8Weight& w, cudaStream_t stream,
                const std::function<void(int64_t, int64_t, const float*)>& each);

  // The unscaled route's float32 sums scratch: longer batches run in row chunks below it.
  static constexpr size_t kMaxSumsBytes = size_t(256) << 20;
  // The rows of each chunk of an n-row unscaled product of n_out outputs (the last may be
  // shorter): n itself where its sums fit kMaxSumsBytes, else equal chunks rounded up to whole
  // 128-row tiles where that still fits, else up to a multiple of 16: never more chunks than
  // kMaxSumsBytes forces.
  static int64_t chunk_rows(int64_t n, int64_t n_out);

 private:
  // (n, out, in, out ld, out dtype, route, bias, accumulate)
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, bool, bool>;
  static bool takes(Route r, const Fp8Weight& w);
  Plan make_plan(const Key& k, DType bias_dtype);
  // The cached plan of k (made now unless capturing), or null when there is none / no algorithm.
  Plan* plan_for(const Key& k, DType bias_dtype, bool capturing);
  bool run_scaled(Route r, const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                  const Tensor& bias, bool accumulate, bool capturing, cudaStream_t stream);
  bool run_unscaled(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                    const Tensor& bias, bool accumulate, bool capturing, cudaStream_t stream);
  // Rows per unscaled chunk for n_out outputs.
  static int64_t unscaled_chunk_rows(int64_t n_out);
  // The sums scratch of `bytes` (grown outside capture only; never freed while this lives: a
  // captured graph keeps its pointer), or null inside a capture that would need more.
  float* sums(size_t bytes, bool capturing);

  bool fast_accum_ = false;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  std::map<Key, Plan> plans_;
  std::vector<void*> sums_blocks_;
  size_t sums_bytes_ = 0;
};

}  // namespace seam::cuda
