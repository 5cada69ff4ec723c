// CudaBackend::linear_fp8: quantize the activations (fp8_quantize.cu) into the FP8 scratch,
// then the product (fp8_gemm.cu).
//
// The scratch (codes [n, in] and scales [n, n_groups]) grows outside graph capture only and
// is never released while the backend lives: the graph warm-ups before each capture grow it
// to the largest shape a graph will see, and a graph captured earlier keeps pointing at
// memory that stays valid. A capture that would need more than the scratch holds is an error
// (never a silent reallocation under a baked pointer).
#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gemm.h"
#include "backend/cuda/fp8_quantize.h"
#include "backend/op_checks.h"

namespace seam::cuda {

// Below this many rows the CUDA-core kernel (a GEMV per row) is used: cuBLASLt's FP8 tiles
// waste most of their work on a handful of tokens.
constexpr int64_t kFp8CublasMinRows = 16;

Fp8Scratch::~Fp8Scratch() {
  for (void* p : blocks) cudaFree(p);
}

void* Fp8Scratch::reserve(size_t bytes, bool capturing) {
  if (bytes <= size) return current;
  SEAM_CHECK(!capturing, "linear_fp8: ", bytes, " bytes of FP8 scratch needed inside a graph capture (", size,
             " reserved); the warm-up before the capture must run the largest shape first");
  void* p = nullptr;
  SEAM_CUDA_CHECK(cudaMalloc(&p, bytes));
  blocks.push_back(p);
  current = p;
  size = bytes;
  return p;
}

void CudaBackend::linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate) {
  op_checks::linear_fp8(out, x, w, bias, Device::cuda);
  const int64_t n = x.size(0), n_in = x.size(1);
  if (n == 0) return;
  const int64_t n_groups = w.act == Fp8ActScheme::dynamic_group128 ? (n_in + kFp8Group - 1) / kFp8Group : 1;
  const size_t code_bytes = (size_t(n * n_in) + 255) / 256 * 256;
  char* base = static_cast<char*>(fp8_scratch_.reserve(code_bytes + size_t(n * n_groups) * 4, capturing_));
  const Tensor codes(base, DType::fp8_e4m3, Device::cuda, {n, n_in});
  const Tensor scales(base + code_bytes, DType::f32, Device::cuda, {n, n_groups});
  launch_fp8_quantize_act(codes, scales, x, w, stream_);
  // Tensor cores where cuBLASLt takes the scheme and the batch is past GEMV sizes; else (and
  // for 128-blocks, for now) the CUDA-core kernel.
  if (n >= kFp8CublasMinRows && fp8_cublaslt_.run(out, codes, scales, w, bias, accumulate, capturing_, stream_)) return;
  launch_fp8_gemm_simt(out, codes, scales, w, bias, accumulate, stream_);
}

}  // namespace seam::cuda
