#include "backend/cuda/cublaslt_gemm.h"

#include "backend/cuda/bias_add.h"
#include "backend/cuda/cuda_check.h"

namespace seam::cuda {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: throw Error(detail::concat("linear: unsupported dtype ", dtype_name(t)));
  }
}

// Largest power of two (<= 256) dividing the address: cuBLASLt kernels assume the
// alignment the preference promises.
int64_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int64_t a = 1;
  while (a < 256 && (v % uintptr_t(a * 2)) == 0) a *= 2;
  return a;
}

}  // namespace

CublasLtGemm::CublasLtGemm() {
  SEAM_CUBLAS_CHECK(cublasLtCreate(&handle_));
  SEAM_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
}

CublasLtGemm::~CublasLtGemm() {
  for (auto& [key, plan] : plans_) destroy(plan);
  cudaFree(workspace_);  // destructor: no throw
  cublasLtDestroy(handle_);
}

void CublasLtGemm::destroy(Plan& p) {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  p = Plan{};
}

// Column-major view of the row-major problem: out^T [n_out x n] = W^T-op(A) * x^T(B), with
// A = w as a column-major [n_in x n_out] matrix (ld n_in, op T), B = x as [n_in x n] (ld = row
// stride), C = D = out as [n_out x n] (ld = row stride). The bias runs along n_out, the rows of C.
CublasLtGemm::Plan CublasLtGemm::make_plan(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                                           bool fuse_bias, bool* found) {
  const uint64_t m = uint64_t(w.size(0)), n = uint64_t(x.size(0)), k = uint64_t(w.size(1));
  const cudaDataType_t ab_type = cuda_type(x.dtype), c_type = cuda_type(out.dtype);
  Plan p;
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
  if (fuse_bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    const cudaDataType_t bias_type = cuda_type(bias.dtype);
    SEAM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    const void* bp = bias.data;
    SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)));
  }
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, ab_type, k, m, int64_t(k)));
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, ab_type, k, n, x.stride[0]));
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, c_type, m, n, out.stride[0]));

  cublasLtMatmulPreference_t pref = nullptr;
  SEAM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = kWorkspaceBytes;
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const uint32_t al_a = uint32_t(alignment(w.data)), al_b = uint32_t(alignment(x.data)),
                 al_c = uint32_t(alignment(out.data));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a)));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b)));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c)));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c)));
  cublasLtMatmulHeuristicResult_t result{};
  int n_results = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &n_results);
  cublasLtMatmulPreferenceDestroy(pref);
  *found = st == CUBLAS_STATUS_SUCCESS && n_results > 0;
  if (*found) {
    p.algo = result.algo;
    p.fused_bias = fuse_bias;
  }
  return p;
}

CublasLtGemm::Plan& CublasLtGemm::plan_for(const Key& key, const Tensor& out, const Tensor& x, const Tensor& w,
                                           const Tensor& bias) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  bool found = false;
  Plan p;
  if (bias.defined() && bias.dtype == out.dtype) {
    p = make_plan(out, x, w, bias, true, &found);
    if (!found) destroy(p);
  }
  if (!found) {
    p = make_plan(out, x, w, bias, false, &found);
    if (!found) {
      destroy(p);
      throw Error(detail::concat("linear: cuBLASLt has no algorithm for x ", x.shape_str(), " ", dtype_name(x.dtype),
                                 ", w ", w.shape_str(), ", out ", dtype_name(out.dtype)));
    }
  }
  return plans_.emplace(key, p).first->second;
}

void CublasLtGemm::run(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, cudaStream_t stream,
                       bool accumulate) {
  if (x.size(0) == 0 || w.size(0) == 0) return;
  const Key key = {w.size(0),
                   x.size(0),
                   w.size(1),
                   x.stride[0],
                   out.stride[0],
                   int64_t(x.dtype),
                   int64_t(out.dtype),
                   bias.defined() ? int64_t(bias.dtype) : -1,
                   alignment(w.data),
                   alignment(x.data),
                   alignment(out.data),
                   bias.defined() ? alignment(bias.data) : 0};
  Plan& p = plan_for(key, out, x, w, bias);
  if (p.fused_bias) {  // the plan is shared by every bias of this shape: point it at this one
    const void* bp = bias.data;
    SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)));
  }
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  SEAM_CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &alpha, w.data, p.a, x.data, p.b, &beta, out.data, p.c, out.data,
                                   p.c, &p.algo, workspace_, kWorkspaceBytes, stream));
  if (bias.defined() && !p.fused_bias) launch_bias_add(out, bias, stream);
}

}  // namespace seam::cuda
