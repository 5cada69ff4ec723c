#include "backend/cuda/fp8_cublaslt.h"

#include <algorithm>

#include "backend/cuda/bias_add.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/fp8_gemm_wgmma_ws.h"
#include "backend/cuda/fp8_scale_epilogue.h"

namespace seam::cuda {

namespace {

cudaDataType_t out_type(DType t) {
  return t == DType::f32 ? CUDA_R_32F : t == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
}

template <typename V>
void set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const V& v) {
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)));
}

}  // namespace

const char* Fp8CublasLt::route_name(Route r) {
  switch (r) {
    case Route::outer: return "OUTER_VEC_32F x OUTER_VEC_32F";
    case Route::block: return "BLK128x128_32F x VEC128_32F";
    case Route::unscaled: return "unscaled E4M3 GEMM + scale epilogue";
  }
  return "?";
}

bool Fp8CublasLt::takes(Route r, const Fp8Weight& w) {
  switch (r) {
    case Route::outer:
    case Route::unscaled:
      // Per-tensor W (with SCALAR_32F) is not used: the loader stores per-tensor weights
      // per-channel, and a per-tensor op runs the CUDA-core kernel.
      return w.w_scheme == Fp8WeightScheme::per_channel;  // a static scale is written per row too
    case Route::block:
      // The compact scales' rows are 16-byte aligned only when ceil(in / 128) % 4 == 0; the
      // leading dimension cuBLASLt assumes for them is not documented past that.
      return w.w_scheme == Fp8WeightScheme::block128 && w.w_scale_blocks.defined() &&
             ((w.w.size(1) + kFp8Group - 1) / kFp8Group) % 4 == 0;
  }
  return false;
}

Fp8CublasLt::Fp8CublasLt() : Fp8CublasLt(fp8_gemm_wgmma_ws_accum(Fp8WsAccum::by_switch) == Fp8WsAccum::fast) {}

Fp8CublasLt::~Fp8CublasLt() {
  for (auto& [k, p] : plans_) {
    if (p.op) cublasLtMatmulDescDestroy(p.op);
    for (auto l : {p.a, p.b, p.c})
      if (l) cublasLtMatrixLayoutDestroy(l);
  }
  for (void* b : sums_blocks_) cudaFree(b);
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

Fp8CublasLt::Plan Fp8CublasLt::make_plan(const Key& k, DType bias_dtype) {
  const auto [n, n_out, n_in, ldc, dt, route, has_bias, acc] = k;
  (void)acc;
  Plan p;
  // FP8 TN on Hopper: k a multiple of 16, leading dimensions 16-byte aligned.
  const int64_t out_elem = int64_t(dtype_size(DType(dt)));
  if (n_in % 16 != 0 || (ldc * out_elem) % 16 != 0) return p;
  if (!handle_) {
    SEAM_CUBLAS_CHECK(cublasLtCreate(&handle_));
    SEAM_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
  }
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(p.op, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set(p.op, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  set(p.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(fast_accum_ ? 1 : 0));
  // The scale modes (fp8_cublaslt.h); the pointers are set per call (tensors of this call). The
  // unscaled route sets none: its scales are 1.
  if (route != int(Route::unscaled)) {
    const bool block = route == int(Route::block);
    const int32_t a_mode =
        block ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    const int32_t b_mode = block ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    set(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode);
    set(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode);
  }
  if (has_bias) {
    set(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    set(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, out_type(bias_dtype));
  }
  const cudaDataType_t ot = out_type(DType(dt));
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, uint64_t(n_in), uint64_t(n_out), n_in));
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_8F_E4M3, uint64_t(n_in), uint64_t(n), n_in));
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, ot, uint64_t(n_out), uint64_t(n), ldc));
  cublasLtMatmulPreference_t pref = nullptr;
  SEAM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = kWorkspaceBytes;
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  cublasLtMatmulHeuristicResult_t h{};
  int n_found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &h, &n_found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st == CUBLAS_STATUS_SUCCESS && n_found > 0) {
    p.ok = true;
    p.algo = h.algo;
    p.workspace = h.workspaceSize;
  }
  return p;
}

Fp8CublasLt::Plan* Fp8CublasLt::plan_for(const Key& k, DType bias_dtype, bool capturing) {
  auto it = plans_.find(k);
  if (it == plans_.end()) {
    if (capturing) return nullptr;
    it = plans_.emplace(k, make_plan(k, bias_dtype)).first;
  }
  return it->second.ok ? &it->second : nullptr;
}

int64_t Fp8CublasLt::unscaled_chunk_rows(int64_t n_out) {
  // At most kMaxSumsBytes of sums, and at most the epilogue grid's 65,535 rows.
  const int64_t rows = std::min<int64_t>(int64_t(kMaxSumsBytes / sizeof(float)) / std::max<int64_t>(1, n_out), 65535);
  return std::max<int64_t>(16, rows / 16 * 16);
}

int64_t Fp8CublasLt::chunk_rows(int64_t n, int64_t n_out) {
  // Equal chunks on whole 128-row tiles where they fit: 4,096 rows of Llama-3.1-8B's gate_up
  // (28,672 sums a row, 2,336 rows under kMaxSumsBytes) run as 2 x 2,048, not 2,336 + 1,760,
  // whose partial row tiles cost the GEMM a 33rd row of tiles for 32 tiles' work.
  const int64_t most = unscaled_chunk_rows(n_out);
  if (n <= most) return n;
  const int64_t parts = (n + most - 1) / most, even = (n + parts - 1) / parts;
  const int64_t tiles = (even + 127) / 128 * 128;
  return tiles <= most ? tiles : (even + 15) / 16 * 16;  // <= most, itself a multiple of 16
}

float* Fp8CublasLt::sums(size_t bytes, bool capturing) {
  if (bytes <= sums_bytes_) return static_cast<float*>(sums_blocks_.back());
  if (capturing) return nullptr;
  void* p = nullptr;
  SEAM_CUDA_CHECK(cudaMalloc(&p, bytes));
  sums_blocks_.push_back(p);
  sums_bytes_ = bytes;
  return static_cast<float*>(p);
}

bool Fp8CublasLt::has_algorithm(Route r, int64_t n, const Fp8Weight& w, DType out_dtype) {
  if (!takes(r, w)) return false;
  const int64_t n_out = w.w.size(0), n_in = w.w.size(1);
  if (r == Route::unscaled)
    return plan_for(Key{chunk_rows(n, n_out), n_out, n_in, n_out, int(DType::f32), int(r), false, false}, DType::f32,
                    false) != nullptr;
  return plan_for(Key{n, n_out, n_in, n_out, int(out_dtype), int(r), false, false}, out_dtype, false) != nullptr;
}

bool Fp8CublasLt::run(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                      const Tensor& bias, bool accumulate, bool capturing, cudaStream_t stream) {
  if (w.w_scheme == Fp8WeightScheme::block128)
    return run_route(Route::block, out, codes, act_scales, w, bias, accumulate, capturing, stream);
  return run_route(Route::outer, out, codes, act_scales, w, bias, accumulate, capturing, stream) ||
         run_route(Route::unscaled, out, codes, act_scales, w, bias, accumulate, capturing, stream);
}

bool Fp8CublasLt::run_route(Route r, const Tensor& out, const Tensor& codes, const Tensor& act_scales,
                            const Fp8Weight& w, const Tensor& bias, bool accumulate, bool capturing,
                            cudaStream_t stream) {
  if (!takes(r, w)) return false;
  if (r == Route::unscaled) return run_unscaled(out, codes, act_scales, w, bias, accumulate, capturing, stream);
  return run_scaled(r, out, codes, act_scales, w, bias, accumulate, capturing, stream);
}

bool Fp8CublasLt::run_scaled(Route r, const Tensor& out, const Tensor& codes, const Tensor& act_scales,
                             const Fp8Weight& w, const Tensor& bias, bool accumulate, bool capturing,
                             cudaStream_t stream) {
  Key k{out.size(0), w.w.size(0), w.w.size(1), out.stride[0], int(out.dtype), int(r), bias.defined(), accumulate};
  Plan* p = plan_for(k, bias.defined() ? bias.dtype : out.dtype, capturing);
  // A scale mode without a BIAS epilogue algorithm: the product alone, then bias_add (as the
  // dense path does; out then rounds twice where the epilogue rounds once).
  bool bias_after = false;
  if (!p && bias.defined()) {
    std::get<6>(k) = false;
    p = plan_for(k, out.dtype, capturing);
    bias_after = p != nullptr;
  }
  if (!p) return false;
  const void* a_scale = r == Route::block ? w.w_scale_blocks.data : w.w_scale.data;
  const void* b_scale = act_scales.data;
  set(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale);
  set(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale);
  if (bias.defined() && !bias_after) set(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data);
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  SEAM_CUBLAS_CHECK(cublasLtMatmul(handle_, p->op, &alpha, w.w.data, p->a, codes.data, p->b, &beta, out.data, p->c,
                                   out.data, p->c, &p->algo, workspace_, p->workspace, stream));
  if (bias_after) launch_bias_add(out, bias, stream);
  return true;
}

Fp8CublasLt::SumsRun Fp8CublasLt::sums_ready(int64_t n, const Fp8Weight& w, bool capturing) {
  SumsRun r;
  r.n = n;
  r.takes = takes(Route::unscaled, w);
  if (!r.takes || n == 0) return r;
  const int64_t n_out = w.w.size(0), n_in = w.w.size(1);
  r.chunk = chunk_rows(n, n_out);
  const int64_t last = n % r.chunk == 0 ? r.chunk : n % r.chunk;
  auto key = [&](int64_t m) { return Key{m, n_out, n_in, n_out, int(DType::f32), int(Route::unscaled), false, false}; };
  r.first = plan_for(key(r.chunk), DType::f32, capturing);
  r.last = r.first ? plan_for(key(last), DType::f32, capturing) : nullptr;
  r.sums = r.last ? sums(size_t(r.chunk * n_out) * sizeof(float), capturing) : nullptr;
  return r;
}

void Fp8CublasLt::run_sums(const SumsRun& run, const Tensor& codes, const Fp8Weight& w, cudaStream_t stream,
                           const std::function<void(int64_t, int64_t, const float*)>& each) {
  const int64_t n = codes.size(0), n_in = w.w.size(1);
  SEAM_CHECK(run.ready() && run.n == n, "fp8 cuBLASLt: the unscaled product of ", n, " rows of ",
             w.w.shape_str(), " is not ready (sums_ready of those rows first)");
  if (n == 0) return;
  const int64_t chunk = run.chunk;
  float* s = run.sums;
  const float alpha = 1.f, beta = 0.f;
  for (int64_t r0 = 0; r0 < n; r0 += chunk) {
    const int64_t m = std::min(chunk, n - r0);
    Plan* p = m == chunk ? run.first : run.last;
    SEAM_CUBLAS_CHECK(cublasLtMatmul(handle_, p->op, &alpha, w.w.data, p->a, codes.ptr<uint8_t>() + r0 * n_in, p->b,
                                     &beta, s, p->c, s, p->c, &p->algo, workspace_, p->workspace, stream));
    each(r0, m, s);
  }
}

bool Fp8CublasLt::run_unscaled(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                               const Tensor& bias, bool accumulate, bool capturing, cudaStream_t stream) {
  // Every plan and the scratch first: nothing is enqueued unless the whole product runs here.
  const SumsRun run = sums_ready(out.size(0), w, capturing);
  if (!run.ready()) return false;
  // act_scales [1, n]: one scale per row (per-token, or the static scale written per row).
  run_sums(run, codes, w, stream, [&](int64_t r0, int64_t m, const float* s) {
    launch_fp8_scale_epilogue(out.slice_rows(r0, m), s, act_scales.ptr<const float>() + r0, w, bias, accumulate,
                              stream);
  });
  return true;
}

}  // namespace seam::cuda
