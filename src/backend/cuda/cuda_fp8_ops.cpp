// CudaBackend::linear_fp8 and its norm fusions: 1..kFp8GemvMaxRows rows run the FP8 GEMV
// (fp8_gemv.h, its inner loop by SEAM_FP8_GEMV; the activation quantization, and the norm / GLU
// of the fused ops, inside it);
// more rows quantize the activations (fp8_quantize.cu, or the norm's own kernel,
// fp8_rms_norm_quantize.h, or the gated activation's, fp8_gated_act_quantize.h) into the FP8
// scratch, then the product (SEAM_FP8_GEMM, cuda_backend_impl.h): kFp8GemvMaxRows + 1 ..
// kFp8SkinnyMaxRows (64) rows of 128-block weights, on Hopper (sm_90a), the skinny swap-AB wgmma
// GEMM that streams the weight with the scales in its epilogue and split K (fp8_gemm_skinny_wgmma.h;
// SEAM_FP8_SKINNY=on for every scheme, off for none; not under SEAM_FP8_GEMM=wgmma / cublaslt);
// past 64 rows by default (ws-lt) cuBLASLt's route where it takes the weight (per-channel), else
// the warp-specialised wgmma GEMM with the scales in its epilogue (fp8_gemm_wgmma_ws.h; ws: that
// GEMM for every scheme, the gated product with the activation in its epilogue); otherwise
// cuBLASLt's E4M3 GEMM (fp8_cublaslt.h) where it takes the scheme, else on Hopper the one-block
// wgmma GEMM (fp8_gemm_wgmma.h: K % 128 == 0, N % 8 == 0; the 128-block scheme), else the
// CUDA-core kernel (fp8_gemm.cu). The gated MLP's product past the GEMV for per-channel weights
// and per-token activations (SEAM_FP8_GATED_ROUTE=lt, the default, under ws-lt, auto, cublaslt):
// cuBLASLt's unscaled sums, then one kernel for the scales, the gated activation and act's codes
// (gate_up_act_fp8_lt, fp8_scaled_gated_act_quantize.h). The qkv product on the same route
// (SEAM_FP8_QKV_ROPE_FUSED=1, the default): cuBLASLt's sums, then one kernel for the scales, RoPE
// and the KV store (qkv_rope_store_fp8_lt, rope_from_fp8_sums.h).
//
// The scratch (codes [n, in] and scales [n_groups, n]) grows outside graph capture only and
// is never released while the backend lives: the graph warm-ups before each capture grow it
// to the largest shape a graph will see, and a graph captured earlier keeps pointing at
// memory that stays valid. A capture that would need more than the scratch holds is an error
// (never a silent reallocation under a baked pointer). The skinny GEMM's split-K workspace
// (tickets + partials) follows the same rule; a new block's tickets are zeroed when it is
// allocated (outside capture, on the backend's stream before the launch that uses it).
#include <algorithm>
#include <tuple>
#include <utility>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/fp8_cublaslt.h"
#include "backend/cuda/fp8_gated_act_quantize.h"
#include "backend/cuda/fp8_gemm.h"
#include "backend/cuda/fp8_gemm_skinny_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma_ws.h"
#include "backend/cuda/fp8_gemv.h"
#include "backend/cuda/fp8_quantize.h"
#include "backend/cuda/fp8_rms_norm_quantize.h"
#include "backend/cuda/fp8_scale_norm_quantize.h"
#include "backend/cuda/fp8_scaled_gated_act_quantize.h"
#include "backend/cuda/rope_from_fp8_sums.h"
#include "backend/op_checks.h"

namespace seam::cuda {

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

std::pair<Tensor, Tensor> CudaBackend::fp8_act_buffers(Fp8Scratch& scratch, int64_t n, int64_t n_in, Fp8ActScheme act) {
  const int64_t n_groups = act == Fp8ActScheme::dynamic_group128 ? (n_in + kFp8Group - 1) / kFp8Group : 1;
  const size_t code_bytes = (size_t(n * n_in) + 255) / 256 * 256;
  char* base = static_cast<char*>(scratch.reserve(code_bytes + size_t(n * n_groups) * 4, capturing_));
  return {Tensor(base, DType::fp8_e4m3, Device::cuda, {n, n_in}),
          Tensor(base + code_bytes, DType::f32, Device::cuda, {n_groups, n})};
}

void* CudaBackend::fp8_skinny_workspace(size_t bytes) {
  void* before = fp8_skinny_scratch_.current;
  void* p = fp8_skinny_scratch_.reserve(bytes, capturing_);
  if (p != before)  // a new block (never inside a capture: reserve refuses to grow there)
    SEAM_CUDA_CHECK(cudaMemsetAsync(p, 0, size_t(kFp8SkinnyTickets) * 4, stream_));
  return p;
}

void CudaBackend::fp8_product(const Tensor& out, const Tensor& codes, const Tensor& scales, const Fp8Weight& w,
                              const Tensor& bias, bool accumulate) {
  // Decode batches past the GEMV (SEAM_FP8_SKINNY): the skinny swap-AB wgmma GEMM.
  const int64_t n = codes.size(0);
  const bool skinny = fp8_skinny_ == Fp8SkinnyMode::on ||
                      (fp8_skinny_ == Fp8SkinnyMode::auto_block128 && w.w_scheme == Fp8WeightScheme::block128);
  if (skinny && (fp8_gemm_mode_ == Fp8GemmMode::auto_route || fp8_ws_mode()) &&
      n > kFp8GemvMaxRows && n <= kFp8SkinnyMaxRows && fp8_gemm_skinny_wgmma_applies(out, codes, w)) {
    const size_t bytes = fp8_gemm_skinny_wgmma_workspace_bytes(fp8_gemm_skinny_wgmma_plan_for(codes, w));
    void* workspace = bytes > 0 ? fp8_skinny_workspace(bytes) : nullptr;
    return launch_fp8_gemm_skinny_wgmma(out, codes, scales, w, bias, accumulate, stream_, workspace, bytes);
  }
  // SEAM_FP8_GEMM=ws: the warp-specialised wgmma GEMM (128-row tiles) past the decode batch sizes,
  // whose rows the routes below (and the GEMV before) are shaped for; ws-lt (the default): there
  // cuBLASLt's route first where it takes the weight (per-channel: faster with fast accumulation,
  // cuda_backend_impl.h), the warp-specialised GEMM for the rest.
  if (fp8_ws_mode() && codes.size(0) > kFp8WsMinRows && fp8_gemm_wgmma_ws_applies(out, codes, w)) {
    if (fp8_gemm_mode_ == Fp8GemmMode::ws_lt &&
        fp8_cublaslt_.run(out, codes, scales, w, bias, accumulate, capturing_, stream_))
      return;
    return launch_fp8_gemm_wgmma_ws(out, codes, scales, w, bias, accumulate, stream_);
  }
  const bool wgmma_ok = fp8_gemm_mode_ != Fp8GemmMode::cublaslt && fp8_gemm_wgmma_applies(out, codes, w);
  if (wgmma_ok && fp8_gemm_mode_ == Fp8GemmMode::wgmma)
    return launch_fp8_gemm_wgmma(out, codes, scales, w, bias, accumulate, stream_);
  if (fp8_cublaslt_.run(out, codes, scales, w, bias, accumulate, capturing_, stream_)) return;
  if (wgmma_ok) return launch_fp8_gemm_wgmma(out, codes, scales, w, bias, accumulate, stream_);
  launch_fp8_gemm_simt(out, codes, scales, w, bias, accumulate, stream_);
}

void CudaBackend::drop_fp8_pending() {
  const bool unwritten = fp8_pending_.act_unwritten;
  fp8_pending_ = {};
  SEAM_CHECK(!unwritten, "internal error: rms_norm_gate_up_act_fp8 left act unwritten for the FP8 codes of its next "
             "linear_fp8, and another op ran first");
}

bool CudaBackend::takes_pending(const Fp8PendingAct& pending, const Tensor& x, const Fp8Weight& w) {
  const bool takes = pending.x == x.data && pending.n == x.size(0) && pending.n_in == x.size(1) &&
                     pending.act == w.act && pending.ub == w.act_amax_ub && x.stride[0] == x.size(1);
  SEAM_CHECK(takes || !pending.act_unwritten, "internal error: rms_norm_gate_up_act_fp8 left act unwritten for the FP8 "
             "codes of a linear_fp8 that does not take them");
  return takes;
}

void CudaBackend::linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate) {
  op_checks::linear_fp8(out, x, w, bias, Device::cuda);
  fp8_prenorm_ = {};  // not a norm fusion: whatever linear_fp8_accumulate_before_norm left is not for this
  const Fp8PendingAct pending = std::exchange(fp8_pending_, Fp8PendingAct{});
  const bool takes = takes_pending(pending, x, w);
  const int64_t n = x.size(0), n_in = x.size(1);
  if (n == 0) return;
  // Where act was not written its codes are the only input, whatever the row count.
  if (takes && pending.act_unwritten) return fp8_product(out, pending.codes, pending.scales, w, bias, accumulate);
  if (fp8_gemv_applies(out, x, w)) return fp8_gemv(out, x, w, bias, accumulate);
  if (takes) return fp8_product(out, pending.codes, pending.scales, w, bias, accumulate);
  const auto [codes, scales] = fp8_act_buffers(fp8_scratch_, n, n_in, w.act);
  launch_fp8_quantize_act(codes, scales, x, w, stream_);
  fp8_product(out, codes, scales, w, bias, accumulate);
}

// Past the GEMV on cuBLASLt's unscaled sums (the route linear_fp8 takes there for per-channel
// weights): x's codes as linear_fp8 makes or takes them, the product, then one kernel a row chunk
// for the scale epilogue (+ residual) and the next norm's FP8 activations
// (fp8_scale_norm_quantize.h), recorded in fp8_prenorm_ for that norm fusion. Elsewhere, or under
// SEAM_FP8_NORM_EPILOGUE=0, linear_fp8 alone (the next op then norms residual itself).
void CudaBackend::linear_fp8_accumulate_before_norm(Tensor residual, Tensor x, const Fp8Weight& w, Tensor bias,
                                                    Tensor norm_weight, float eps, const Fp8Weight& next) {
  fp8_prenorm_ = {};
  const bool shape_ok = x.ndim == 2 && residual.ndim == 2 && residual.size(0) == x.size(0) &&
                        next.w.defined() && next.w.ndim == 2 && next.w.size(1) == residual.size(1);
  if (!fp8_norm_epilogue_ || !shape_ok || !fp8_sums_route(x, norm_weight) ||
      !fp8_scale_norm_quantize_applies(residual, w, bias, norm_weight, next))
    return linear_fp8(residual, x, w, bias, true);
  op_checks::linear_fp8(residual, x, w, bias, Device::cuda);
  const int64_t n = x.size(0), n_in = x.size(1), n_out = residual.size(1);
  const Fp8CublasLt::SumsRun run = fp8_cublaslt_.sums_ready(n, w, capturing_);
  if (!run.ready()) return linear_fp8(residual, x, w, bias, true);
  // x's codes: the gated activation's (fp8_pending_) where they are x's, as linear_fp8 takes them.
  const Fp8PendingAct pending = std::exchange(fp8_pending_, Fp8PendingAct{});
  const bool takes = takes_pending(pending, x, w);
  Tensor codes = pending.codes, scales = pending.scales;
  if (!takes) {
    std::tie(codes, scales) = fp8_act_buffers(fp8_scratch_, n, n_in, w.act);
    launch_fp8_quantize_act(codes, scales, x, w, stream_);
  }
  const auto [next_codes, next_scales] = fp8_act_buffers(fp8_prenorm_scratch_, n, n_out, next.act);
  fp8_cublaslt_.run_sums(run, codes, w, stream_, [&](int64_t r0, int64_t m, const float* sums) {
    launch_fp8_scale_norm_quantize(residual.slice_rows(r0, m), sums, scales.ptr<const float>() + r0, w, bias,
                                   norm_weight, eps, next, next_codes.ptr<uint8_t>(), next_scales.ptr<float>(), r0, n,
                                   stream_);
  });
  fp8_prenorm_ = {residual.data,  norm_weight.data, eps,         n,          n_out, next.act, next.act_amax_ub,
                  next.act == Fp8ActScheme::static_per_tensor ? next.input_scale.data : nullptr,
                  next_codes,     next_scales};
}

std::pair<Tensor, Tensor> CudaBackend::fp8_norm_codes(const Fp8PreNorm& pre, const Tensor& x,
                                                      const Tensor& norm_weight, float eps, const Fp8Weight& w) {
  const int64_t n = x.size(0), n_in = x.size(1);
  const bool same_scale = w.act != Fp8ActScheme::static_per_tensor || pre.input_scale == w.input_scale.data;
  if (pre.x != nullptr && pre.x == x.data && pre.g == norm_weight.data && pre.eps == eps && pre.n == n &&
      pre.n_in == n_in && x.stride[0] == n_in && pre.act == w.act && pre.ub == w.act_amax_ub && same_scale)
    return {pre.codes, pre.scales};
  auto buffers = fp8_act_buffers(fp8_scratch_, n, n_in, w.act);
  launch_fp8_rms_norm_quantize(buffers.first, buffers.second, x, norm_weight, eps, w, stream_);
  return buffers;
}

// The load-time weight quantization is the per-token activation quantizer's math over the
// weight's rows (fp8_act.cuh; unbounded: ub 0), so its codes and scales are core/fp8.h's
// quantize_fp8_per_channel bit for bit. The grid's y dimension (rows) is at most 65,535.
void CudaBackend::quantize_fp8_per_channel(Tensor codes, Tensor scales, Tensor w) {
  op_checks::quantize_fp8_per_channel(codes, scales, w, Device::cuda);
  Fp8Weight per_row;
  per_row.act = Fp8ActScheme::dynamic_per_token;
  per_row.act_amax_ub = 0.f;
  constexpr int64_t kMaxRows = 65535;
  for (int64_t r = 0; r < w.size(0); r += kMaxRows) {
    const int64_t n = std::min(kMaxRows, w.size(0) - r);
    launch_fp8_quantize_act(codes.slice_rows(r, n), scales.slice_rows(r, n), w.slice_rows(r, n), per_row, stream_);
  }
}

// The norm fusions (backend.h): at GEMV batch sizes the norm runs in the GEMV's prologue (and
// the GLU in its epilogue); past them the norm writes the FP8 activations itself
// (fp8_rms_norm_quantize.h) for the GEMM, and the gated activation runs after it.
namespace {

// The prologue half every norm fusion shares: the GEMV's norm arguments, and whether the
// decomposition's `normed` output is one the fused path may skip (x's shape, on this device).
Fp8GemvFusion norm_fusion(const Tensor& norm_weight, float eps) {
  Fp8GemvFusion f;
  f.norm_weight = norm_weight;
  f.eps = eps;
  return f;
}
bool norm_fusable(const Tensor& x, const Tensor& normed, const Tensor& norm_weight) {
  return x.ndim == 2 && normed.defined() && normed.ndim == 2 && normed.size(0) == x.size(0) &&
         normed.size(1) == x.size(1) && norm_weight.device == Device::cuda;
}

}  // namespace

void CudaBackend::rms_norm_linear_fp8(Tensor out, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                      const Fp8Weight& w, Tensor bias) {
  drop_fp8_pending();  // only the linear_fp8 right after rms_norm_gate_up_act_fp8 takes it
  const Fp8PreNorm pre = std::exchange(fp8_prenorm_, Fp8PreNorm{});
  const Fp8GemvFusion f = norm_fusion(norm_weight, eps);
  if (norm_fusable(x, normed, norm_weight) && fp8_gemv_fusion_applies(out, x, w, f)) {
    op_checks::linear_fp8(out, x, w, bias, Device::cuda);
    return fp8_gemv(out, x, w, bias, false, f);
  }
  op_checks::linear_fp8(out, x, w, bias, Device::cuda);
  SEAM_CHECK(norm_weight.defined() && norm_weight.device == Device::cuda, "rms_norm: weight is not on the cuda device");
  if (x.size(0) == 0) return;
  const auto [codes, scales] = fp8_norm_codes(pre, x, norm_weight, eps, w);
  fp8_product(out, codes, scales, w, bias, false);
}

// At GEMV batch sizes RoPE and the KV store run in the FP8 GEMV's epilogue too (one kernel for
// norm + qkv + RoPE + store, as the bf16 decode layer's); past them, or where the fusion does not
// apply, the decomposition (the norm fusion, then rope_store_kv).
void CudaBackend::rms_norm_qkv_rope_store_fp8(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                              const Fp8Weight& w, Tensor bias, const RopeStoreArgs& r) {
  drop_fp8_pending();
  const Fp8PreNorm pre = std::exchange(fp8_prenorm_, Fp8PreNorm{});
  Fp8GemvFusion f = norm_fusion(norm_weight, eps);
  f.rope_store = true;
  f.rope = r;
  if (norm_fusable(x, normed, norm_weight) && qkv.ndim == 2 && r.k_cache.ndim == 3 &&
      qkv.size(1) == (r.n_heads + 2 * r.k_cache.size(1)) * r.k_cache.size(2) && fp8_gemv_fusion_applies(qkv, x, w, f)) {
    // The decomposition's checks, on the views it would pass: the same errors either way.
    op_checks::linear_fp8(qkv, x, w, bias, Device::cuda);
    const RopeStoreArgs::Qkv h = r.split_qkv(qkv);
    op_checks::rope(h.q, h.k, r.positions, r.tables(), Device::cuda);
    op_checks::store_kv(r.k_cache, r.v_cache, h.k, h.v, r.slots, Device::cuda, r.kv_scales);
    return fp8_gemv(qkv, x, w, bias, false, f);
  }
  if (qkv_rope_store_fp8_lt(qkv, x, norm_weight, eps, w, bias, r, pre)) return;
  fp8_prenorm_ = pre;  // for the decomposition's rms_norm_linear_fp8, its first FP8 op
  Backend::rms_norm_qkv_rope_store_fp8(qkv, normed, x, norm_weight, eps, w, bias, r);
}

bool CudaBackend::fp8_sums_route(const Tensor& x, const Tensor& norm_weight) const {
  // SEAM_FP8_GEMM=ws and wgmma keep their products on their own kernels, and SEAM_FP8_SKINNY=on
  // gives the skinny GEMM every product of its rows (fp8_product): per-channel ones included.
  const bool mode_takes = fp8_gemm_mode_ != Fp8GemmMode::wgmma && fp8_gemm_mode_ != Fp8GemmMode::ws;
  if (!mode_takes || x.ndim != 2 || x.size(0) <= kFp8GemvMaxRows || !norm_weight.defined() ||
      norm_weight.device != Device::cuda)
    return false;
  return !(fp8_skinny_ == Fp8SkinnyMode::on && fp8_gemm_mode_ != Fp8GemmMode::cublaslt &&
           x.size(0) <= kFp8SkinnyMaxRows);
}

// Past the GEMV: the norm writes x's FP8 codes, cuBLASLt's unscaled product writes float32 sums
// (row chunks), and one kernel a chunk applies the scale epilogue's arithmetic, rotates q and k,
// writes qkv and stores K / V — what fp8_product (the same plans: the same sums) and
// rope_store_kv leave, bit for bit (cuda_fp8_qkv_rope_test), without writing qkv in T and reading
// it back. Under a static activation scheme the norm writes the static scale per row, as for
// fp8_product.
bool CudaBackend::qkv_rope_store_fp8_lt(const Tensor& qkv, const Tensor& x, const Tensor& norm_weight, float eps,
                                        const Fp8Weight& w, const Tensor& bias, const RopeStoreArgs& r,
                                        const Fp8PreNorm& pre) {
  if (!fp8_qkv_rope_fused_ || !fp8_sums_route(x, norm_weight) || qkv.ndim != 2 || qkv.size(0) != x.size(0) ||
      qkv.dtype != x.dtype || !r.k_cache.defined() || r.k_cache.ndim != 3 ||
      (w.act != Fp8ActScheme::dynamic_per_token && w.act != Fp8ActScheme::static_per_tensor) ||
      !rope_store_kv_from_fp8_sums_applies(qkv, r.n_heads, r.tables(), r.k_cache, r.v_cache, w, bias))
    return false;
  // The decomposition's checks, on the views it would pass: the same errors either way.
  op_checks::linear_fp8(qkv, x, w, bias, Device::cuda);
  const RopeStoreArgs::Qkv h = r.split_qkv(qkv);
  op_checks::rope(h.q, h.k, r.positions, r.tables(), Device::cuda);
  op_checks::store_kv(r.k_cache, r.v_cache, h.k, h.v, r.slots, Device::cuda, r.kv_scales);
  const int64_t n = x.size(0);
  const Fp8CublasLt::SumsRun run = fp8_cublaslt_.sums_ready(n, w, capturing_);
  if (!run.ready()) return false;
  const auto [codes, scales] = fp8_norm_codes(pre, x, norm_weight, eps, w);
  fp8_cublaslt_.run_sums(run, codes, w, stream_, [&](int64_t r0, int64_t m, const float* sums) {
    launch_rope_store_kv_from_fp8_sums(qkv.slice_rows(r0, m), r.n_heads, sums, scales.ptr<const float>() + r0, w, bias,
                                       r.positions.slice_rows(r0, m), r.tables(), r.k_cache, r.v_cache,
                                       r.slots.slice_rows(r0, m), stream_, r.kv_scales);
  });
  return true;
}

// Past the decode batches on the warp-specialised GEMM (SEAM_FP8_GEMM=ws-lt, the default, or ws): the norm
// writes x's FP8 codes, the product runs with the gated activation in its epilogue
// (fp8_gemm_wgmma_ws.h: gate_up is never written), and a dynamic scheme's codes of act for the down
// projection come from the plain quantizer — the codes launch_fp8_gated_act_quantize makes, so the
// result is the decomposition's bit for bit (cuda_fp8_test, GatedActQuantizeEqualsActThenQuantize).
// False (nothing run) where the fused product does not apply.
bool CudaBackend::gate_up_act_fp8_glu(const Tensor& act, const Tensor& gate_up, const Tensor& x,
                                      const Tensor& norm_weight, float eps, const Fp8Weight& w, Activation a,
                                      const Fp8PreNorm& pre) {
  if (!fp8_gated_epilogue_ || !fp8_ws_mode() || x.ndim != 2 || x.size(0) <= kFp8WsMinRows ||
      !act.defined() || act.dtype != x.dtype || act.ndim != 2 || act.size(0) != x.size(0) || !act.rows_contiguous() ||
      !norm_weight.defined() || norm_weight.device != Device::cuda)
    return false;
  const int64_t n = x.size(0), n_in = x.size(1), inter = act.size(1);
  op_checks::linear_fp8(gate_up, x, w, Tensor(), Device::cuda);  // the decomposition's checks, same errors
  // The codes' shape alone decides whether the fused product applies: check it before making them.
  if (!fp8_gemm_wgmma_ws_glu_applies(act, fp8_act_buffers(fp8_scratch_, n, n_in, w.act).first, w)) return false;
  const auto [codes, scales] = fp8_norm_codes(pre, x, norm_weight, eps, w);
  launch_fp8_gemm_wgmma_ws_glu(act, codes, scales, w, a, stream_);
  // A static scheme's scale is the down projection's own: its linear_fp8 quantizes act itself.
  if (w.act == Fp8ActScheme::static_per_tensor) return true;
  const auto [act_codes, act_scales] = fp8_act_buffers(fp8_pending_scratch_, n, inter, w.act);
  launch_fp8_quantize_act(act_codes, act_scales, act, w, stream_);
  fp8_pending_ = {act.data, n, inter, w.act, w.act_amax_ub, act_codes, act_scales};
  return true;
}

bool CudaBackend::gate_up_act_fp8_lt(const Tensor& act, const Tensor& gate_up, const Tensor& x,
                                     const Tensor& norm_weight, float eps, const Fp8Weight& w, Activation a,
                                     const Fp8Weight* down, const Fp8PreNorm& pre) {
  if (!fp8_gated_lt_ || !fp8_sums_route(x, norm_weight) || !act.defined() || act.dtype != x.dtype || act.ndim != 2 ||
      act.size(0) != x.size(0) || !act.rows_contiguous() || !fp8_scaled_gated_act_quantize_applies(act, w))
    return false;
  const int64_t n = x.size(0), inter = act.size(1);
  op_checks::linear_fp8(gate_up, x, w, Tensor(), Device::cuda);  // the decomposition's checks, same errors
  const Fp8CublasLt::SumsRun run = fp8_cublaslt_.sums_ready(n, w, capturing_);
  if (!run.ready()) return false;
  const auto [act_codes, act_scales] = fp8_act_buffers(fp8_pending_scratch_, n, inter, w.act);
  // act may stay unwritten where the named down projection takes these codes: linear_fp8's
  // conditions for taking them (same act, shape and scheme) hold by construction there.
  const bool write_act = !(fp8_act_skip_ && down != nullptr && down->act == w.act &&
                           down->act_amax_ub == w.act_amax_ub && down->w.defined() && down->w.ndim == 2 &&
                           down->w.size(1) == inter && act.stride[0] == inter);
  const auto [codes, scales] = fp8_norm_codes(pre, x, norm_weight, eps, w);
  fp8_cublaslt_.run_sums(run, codes, w, stream_, [&](int64_t r0, int64_t m, const float* sums) {
    launch_fp8_scaled_gated_act_quantize(act.slice_rows(r0, m), act_codes.ptr<uint8_t>() + r0 * inter,
                                         act_scales.ptr<float>() + r0, sums, scales.ptr<const float>() + r0, w, a,
                                         w.act_amax_ub, stream_, write_act);
  });
  fp8_pending_ = {act.data, n, inter, w.act, w.act_amax_ub, act_codes, act_scales, !write_act};
  return true;
}

void CudaBackend::rms_norm_gate_up_act_fp8(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight,
                                           float eps, const Fp8Weight& w, Activation a, const Fp8Weight* down) {
  drop_fp8_pending();
  const Fp8PreNorm pre = std::exchange(fp8_prenorm_, Fp8PreNorm{});
  Fp8GemvFusion f = norm_fusion(norm_weight, eps);
  f.glu = true;
  f.glu_act = a;
  if (norm_fusable(x, normed, norm_weight) && gate_up.defined() && gate_up.ndim == 2 && gate_up.size(0) == x.size(0) &&
      gate_up.size(1) == w.w.size(0) && act.dtype == x.dtype && act.ndim == 2 && act.size(0) == x.size(0) &&
      act.rows_contiguous() && fp8_gemv_fusion_applies(act, x, w, f)) {
    op_checks::linear_fp8(gate_up, x, w, Tensor(), Device::cuda);
    return fp8_gemv(act, x, w, Tensor(), false, f);
  }
  if (gate_up_act_fp8_lt(act, gate_up, x, norm_weight, eps, w, a, down, pre)) return;
  if (gate_up_act_fp8_glu(act, gate_up, x, norm_weight, eps, w, a, pre)) return;
  fp8_prenorm_ = pre;  // for the decomposition's rms_norm_linear_fp8
  rms_norm_linear_fp8(gate_up, normed, x, norm_weight, eps, w, Tensor());
  // The gated activation writes act and, under a dynamic scheme (the model's layers share the
  // activation scheme, so the down projection's is gate_up's), its FP8 codes for the next
  // linear_fp8 (fp8_pending_). A static scheme's scale is the down projection's own: not known here.
  const int64_t n = x.size(0), inter = w.w.size(0) / 2;
  SEAM_CHECK(act.defined() && act.dtype == x.dtype && act.ndim == 2 && act.size(0) == n && act.size(1) == inter &&
                 act.rows_contiguous(),
             "rms_norm_gate_up_act_fp8 act: expected [", n, ", ", inter, "] in ", dtype_name(x.dtype), ", got ",
             act.shape_str());
  if (w.act == Fp8ActScheme::static_per_tensor || n == 0) return gated_act(act, gate_up, a);
  const auto [codes, scales] = fp8_act_buffers(fp8_pending_scratch_, n, inter, w.act);
  launch_fp8_gated_act_quantize(act, codes, scales, gate_up, a, w.act, w.act_amax_ub, stream_);
  fp8_pending_ = {act.data, n, inter, w.act, w.act_amax_ub, codes, scales};
}

}  // namespace seam::cuda
