// Backend: the ops of one device, its memory, and graph capture.
//
// Two implementations: backend/cpu (float32 reference, runs everywhere) and
// backend/cuda (bf16/fp16/fp32). Each op checks shapes at its boundary.
//
// Graph rules (DESIGN.md "Graph runtime"): between begin_capture() and
// end_capture() ops are *recorded*, not run; replay() runs the recording with
// the shapes and pointers baked in. Everything that changes per step must
// therefore live in device buffers with fixed addresses and be read by the op
// when it runs; host scalars passed to an op (n_tokens, n_seqs, ...) are baked.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "backend/rope_angle.h"
#include "core/random_fill.h"
#include "core/tensor.h"

namespace seam {

// Metadata of one attention call. Sequences are ordered prefill (extend) rows
// first, then decode rows; a decode row has exactly one new token.
// Token i of sequence s sits at row qo_indptr[s] + j of q/out and has
// position seq_lens[s] - (qo_indptr[s+1]-qo_indptr[s]) + j; it attends
// causally to positions [0, its own position] of its sequence, whose KV slots
// are page_table[req_rows[s]][0 .. seq_lens[s]).
struct AttentionBatch {
  int n_tokens = 0;        // rows of q / out (host, baked in a graph)
  int n_seqs = 0;          // sequences (host, baked in a graph)
  int n_prefill_seqs = 0;  // the first n_prefill_seqs sequences are extend rows
  int n_prefill_tokens = 0;
  int max_seq_len = 0;     // upper bound on seq_lens; 0 = unknown (decode graphs)
  Tensor qo_indptr;        // [n_seqs + 1] i32, device
  Tensor seq_lens;         // [n_seqs] i32, device: KV length including new tokens
  Tensor req_rows;         // [n_seqs] i32, device: row of page_table
  Tensor page_table;       // [max_reqs, max_context] i32, device: KV slot per position
};

// Per-row sampling parameters, all device buffers of n rows.
struct SamplingBatch {
  int n = 0;
  Tensor temperature;  // [n] f32; <= 0 means greedy
  Tensor top_k;        // [n] i32; <= 0 means off
  Tensor top_p;        // [n] f32; 1 means off
  Tensor min_p;        // [n] f32; 0 means off
  Tensor seed;         // [n] i64 (bit pattern of a u64 seed)
  Tensor step;         // [n] i32: index of the token being sampled for this request
};

// Penalties for the rows that use them, as a CSR list of the tokens each row
// has seen: for row r, entries [indptr[r], indptr[r+1]) give a token id, how
// often it occurs in the output so far (0: only in the prompt).
struct PenaltyBatch {
  int n = 0;
  int nnz = 0;
  Tensor indptr;       // [n + 1] i32
  Tensor tokens;       // [nnz] i32
  Tensor out_counts;   // [nnz] i32
  Tensor frequency;    // [n] f32 (OpenAI frequency_penalty, output tokens)
  Tensor presence;     // [n] f32 (OpenAI presence_penalty, output tokens)
  Tensor repetition;   // [n] f32 (HF repetition_penalty, prompt + output; 1 = off)
};

// logit_bias for the rows that use it, as a CSR list: for row r, entries
// [indptr[r], indptr[r+1]) add values[e] to logits[r][tokens[e]].
struct LogitBiasBatch {
  int n = 0;
  int nnz = 0;
  Tensor indptr;  // [n + 1] i32
  Tensor tokens;  // [nnz] i32
  Tensor values;  // [nnz] f32
};

// Log probabilities of n rows of raw float32 logits (log_softmax, no temperature).
// Row r with k[r] < 0 is skipped (its outputs are left as they are: a row that asks
// for none pays nothing but the flag's read). Else:
//   out_sampled[r]    = log_softmax(logits[r])[sampled[r]] (left as is if sampled[r] is out of range)
//   out_top_ids[r][j], out_top[r][j] for j < k[r]: the j-th most likely token and its logprob,
//   by (logprob descending, id ascending); entries j >= k[r] are left as they are.
struct LogprobBatch {
  int n = 0;
  Tensor k;            // [n] i32, -1 .. max_top
  Tensor sampled;      // [n] i32
  Tensor out_sampled;  // [n] f32
  Tensor out_top_ids;  // [n, max_top] i32
  Tensor out_top;      // [n, max_top] f32
};

// An FP8 E4M3 KV cache (--kv-cache-dtype fp8_e4m3) holds codes c = e4m3(k / k_scale) (v alike,
// engine/kv_cache_dtype.h); attention reads k = c * k_scale, v = c * v_scale. A float cache
// holds k and v themselves and ignores the scales.
struct KvScales {
  float k = 1.f;
  float v = 1.f;
};

// Per-layer options of attention(): host values (baked into a graph). Hugging Face semantics:
//   score(q, k_j) = (q . k_j) * scale;
//   logit_softcap > 0: score = logit_softcap * tanh(score / logit_softcap)   (Gemma 2)
//   then the causal mask; sliding_window > 0: a query at position p sees only keys at positions
//   j with p - sliding_window < j <= p (HF `kv_idx > q_idx - sliding_window`), i.e. at most
//   sliding_window keys including itself. Keys wholly before the window are not read.
struct AttentionOptions {
  float scale = 1.f;
  int sliding_window = 0;     // 0: full causal attention
  float logit_softcap = 0.f;  // 0: off
  KvScales kv_scales;         // the layer's FP8 KV cache scales (1.0 unless the checkpoint has k/v scales)
};

// The rotary tables of rope()/rope_store_kv(). rotary_dim = 2 * inv_freq.size(0) <= head_dim:
// only the first rotary_dim dims of each head rotate (HF rotate_half within them: pairs
// (i, i + rotary_dim / 2)); dims [rotary_dim, head_dim) pass through (Phi-4's partial rotary).
// LongRoPE (Phi-3/3.5/4 128k): with inv_freq_long defined (same length as inv_freq), a token at
// position >= long_from uses inv_freq_long, else inv_freq. Implicit from one Tensor: one table.
// Each table is a double frequency stored as float hi + lo (rope_angle.h): inv_freq / inv_freq_long
// hold hi, inv_freq_lo / inv_freq_long_lo lo (undefined: 0, the float is the exact frequency).
// Every backend computes the angle as rope_angle.h defines it (double product, reduced mod 2 pi).
struct RopeTables {
  Tensor inv_freq;          // [rotary_dim / 2] f32 (scaling already applied): hi
  Tensor inv_freq_long;     // [rotary_dim / 2] f32 or undefined: hi
  int long_from = 0;        // first position that uses inv_freq_long
  Tensor inv_freq_lo;       // [rotary_dim / 2] f32 or undefined: lo of inv_freq
  Tensor inv_freq_long_lo;  // [rotary_dim / 2] f32 or undefined: lo of inv_freq_long
  RopeTables() = default;
  RopeTables(Tensor f) : inv_freq(f) {}  // NOLINT(google-explicit-constructor): one table as before
  RopeTables(Tensor f, Tensor f_long, int from) : inv_freq(f), inv_freq_long(f_long), long_from(from) {}
  RopeTables(Tensor f, Tensor f_long, int from, Tensor f_lo, Tensor f_long_lo)
      : inv_freq(f), inv_freq_long(f_long), long_from(from), inv_freq_lo(f_lo), inv_freq_long_lo(f_long_lo) {}
  // The table of a token at `position` (host view of the rule every backend applies per token).
  bool use_long(int position) const { return inv_freq_long.defined() && position >= long_from; }
  // The raw pointers the CPU loop and the kernels read (device pointers for CUDA tensors).
  RopeAngles angles() const {
    const auto p = [](const Tensor& t) { return t.defined() ? t.ptr<float>() : nullptr; };
    return RopeAngles{p(inv_freq), p(inv_freq_lo), p(inv_freq_long), p(inv_freq_long_lo), long_from};
  }
};

// Where rms_norm_qkv_rope_store rotates and stores: one layer's KV cache and this step's
// positions and slots.
struct RopeStoreArgs {
  int n_heads = 0;           // q heads; n_kv_heads and head_dim are k_cache's [_, n_kv_heads, head_dim]
  Tensor positions;          // [n] i32
  Tensor inv_freq;           // [rotary_dim / 2] f32 (RopeTables)
  Tensor inv_freq_long;      // LongRoPE's long table or undefined (RopeTables)
  int long_from = 0;         // (RopeTables)
  Tensor inv_freq_lo;        // (RopeTables)
  Tensor inv_freq_long_lo;   // (RopeTables)
  Tensor k_cache, v_cache;   // [n_slots, n_kv_heads, head_dim]
  Tensor slots;              // [n] i32
  KvScales kv_scales;        // FP8 caches' scales (KvScales)
  RopeTables tables() const { return RopeTables(inv_freq, inv_freq_long, long_from, inv_freq_lo, inv_freq_long_lo); }
  // The q | k | v column blocks of a fused qkv product [n, (n_heads + 2 n_kv_heads) d] as
  // [n, heads, d] views (k_cache gives n_kv_heads and d; the caller has checked the widths).
  struct Qkv {
    Tensor q, k, v;
  };
  Qkv split_qkv(const Tensor& qkv) const {
    const int64_t kv = k_cache.size(1), d = k_cache.size(2), q_size = n_heads * d;
    return {qkv.slice_cols(0, q_size).unflatten_last(n_heads, d), qkv.slice_cols(q_size, kv * d).unflatten_last(kv, d),
            qkv.slice_cols(q_size + kv * d, kv * d).unflatten_last(kv, d)};
  }
};

// The activation of a gated MLP: out = act(gate) * up.
//   silu:      x * sigmoid(x)                                   (Llama, Qwen, Phi, Mistral)
//   gelu_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))   (Gemma: PyTorch gelu(approximate="tanh"))
// computed in float32.
enum class Activation { silu, gelu_tanh };
const char* activation_name(Activation a);

// The scratch of moe_experts (the model's MoeBuffers hold it): a backend uses what its path needs.
// n = the op's rows, k = experts per row.
struct MoeScratch {
  Tensor act;         // [>= n * k, inter] in x's dtype: the experts' silu(gate) * up (required)
  Tensor expert_out;  // [>= n * k, hidden] in x's dtype: each (row, expert)'s down output (optional)
  Tensor index;       // [>= 2 * n_experts + 2 + n * k] i32: grouping by expert (optional)
};

// ---- FP8 linear (quantized weight formats, model/quant_config.h) ----
// An FP8 layer stores W as E4M3 (core/fp8.h) with float32 scales; its product is defined
// exactly here, and every backend computes this (the CPU backend literally, as the reference):
//
//   weights  W[o][k] = fp8(Wq[o][k]) * ws(o, k), where ws is
//              per_tensor  w_scale[0]                       w_scale [1]
//              per_channel w_scale[o]                       w_scale [out]
//              block128    w_scale[o][k / 128]              w_scale [out, ceil(in / 128)]
//            (128x128 blocks are stored expanded to rows: fused q/k/v or gate/up parts need
//             not be multiples of 128 rows; a GEMM with 128x128 block scales compacts them
//             where the parts align)
//   activations, per row i and group g (the whole row; for dynamic_group128 columns
//            [128 g, 128 g + 128)):
//              dynamic_per_token / dynamic_group128: a = max |x[i][k]| over the group, in float32,
//                clamped to act_amax_ub when that is > 0; xs(i, g) = a / 448, or 1 when a == 0
//              static_per_tensor: xs = input_scale[0]
//            Xq[i][k] = e4m3(x[i][k] / xs(i, g)), the float32 quotient rounded to nearest even
//            and saturated to +-448 (f32_to_fp8_e4m3)
//   product  out[i][o] = sum over groups g of (xs(i, g) * ws(o, g)) * S(i, o, g),
//              S = sum_{k in g} fp8(Xq[i][k]) * fp8(Wq[o][k]) in float32 (each product exact);
//            per_tensor and per_channel have one group (the whole row), so
//            out = (xs(i) * ws(o)) * S; then + bias[o] (float32), and for accumulate the sum
//            is added to out[i][o].
// Only the order of the float32 sums is the backend's own; the test bound is the float32
// rounding of that sum, not the quantization (tests/fp8_linear_op_test.cpp).
enum class Fp8WeightScheme : uint8_t { per_tensor, per_channel, block128 };
enum class Fp8ActScheme : uint8_t { dynamic_per_token, dynamic_group128, static_per_tensor };
constexpr int64_t kFp8Group = 128;  // block128's block side / dynamic_group128's group width

const char* fp8_weight_scheme_name(Fp8WeightScheme s);
const char* fp8_act_scheme_name(Fp8ActScheme s);

struct Fp8Weight {
  Tensor w;            // [out, in] fp8_e4m3
  Tensor w_scale;      // f32: [1] | [out] | [out, ceil(in / 128)] by w_scheme
  Fp8WeightScheme w_scheme = Fp8WeightScheme::per_tensor;
  Fp8ActScheme act = Fp8ActScheme::dynamic_per_token;
  Tensor input_scale;  // [1] f32, static_per_tensor only (else undefined)
  float act_amax_ub = 0.f;  // > 0: dynamic amax clamped to it (fbgemm_fp8's activation_scale_ub)
  // block128 only, optional: the same scales compacted to the 128x128 blocks,
  // [ceil(out / 128), ceil(in / 128)] f32 row-major, when every 128-row block of w_scale has one
  // row of scales (the checkpoint's own blocks, fused parts aligned to 128 rows). A tensor-core
  // GEMM with 128x128 block scales (cuBLASLt BLK128x128_32F) reads it; w_scale stays the definition.
  Tensor w_scale_blocks;
};

// A recorded sequence of ops (CUDA graph exec, or the CPU op list).
class Graph {
 public:
  virtual ~Graph() = default;
};

class Communicator;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;

  // ---- memory (start-up only; never in the step loop) ----
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual size_t free_memory() const = 0;  // bytes the device still has
  // Device bytes held by start-up-only buffers (GEMM tuning's timing scratch), freed at
  // end_startup(): graph memory accounting leaves them out.
  virtual size_t startup_scratch_bytes() const { return 0; }
  // Host memory the device copies from without staging (pinned on CUDA). The
  // default is plain host memory.
  virtual void* alloc_host(size_t bytes) { return ::operator new(bytes); }
  virtual void release_host(void* p) { ::operator delete(p); }
  // Copies are ordered with the ops on the backend's stream.
  virtual void copy_h2d(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_d2h(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_d2d(void* dst, const void* src, size_t bytes) = 0;
  virtual void fill(Tensor t, float value) = 0;  // any float dtype; used to poison in tests
  // t (contiguous, f32/f16/bf16) = elements f.first .. f.first + numel of the stream
  // core/random_fill.h describes, each float32 value rounded to t's dtype (--load-format dummy's
  // weights). The default computes them on the host and copies them; CUDA fills on the device.
  virtual void fill_random(Tensor t, const RandomFill& f);
  virtual void synchronize() = 0;

  // ---- ops ----
  // out[i] = table[ids[i]].   out [n, hidden], ids [n] i32, table [vocab, hidden]
  virtual void embedding(Tensor out, Tensor ids, Tensor table) = 0;
  // out = rms_norm(x) * weight over the last dim.   x, out [n, d] or [n, heads, d] (per-head norm,
  // Qwen3 q/k norm; may be in place on a strided view of q/k inside qkv); rows may be strided; weight [d]
  virtual void rms_norm(Tensor out, Tensor x, Tensor weight, float eps) = 0;
  // out = x @ w^T (+ bias).   x [n, in], w [out, in] (HF layout), bias [out] or undefined, out [n, out]
  virtual void linear(Tensor out, Tensor x, Tensor w, Tensor bias) = 0;
  // out += x @ w^T (+ bias), in place: the residual stream takes o_proj's and down_proj's output
  // this way, so no separate add (and no delta buffer) is needed. Shapes as linear; out has x's
  // dtype and must not overlap x.
  virtual void linear_accumulate(Tensor out, Tensor x, Tensor w, Tensor bias) = 0;
  // normed = rms_norm(x) * norm_weight; out = normed @ w^T (+ bias).   x, normed [n, in], out [n, out]
  // `normed` is scratch: a backend that fuses the norm into the product may leave it unwritten
  // (CUDA does for one row: its batch-1 GEMV normalises x while it streams w).
  virtual void rms_norm_linear(Tensor out, Tensor normed, Tensor x, Tensor norm_weight, float eps, Tensor w,
                               Tensor bias) {
    rms_norm(normed, x, norm_weight, eps);
    linear(out, normed, w, bias);
  }
  // Attention's input stage (layers without q/k norm): qkv = rms_norm(x) * norm_weight @ w_qkv^T
  // (+ b_qkv), then rope_store_kv on its q, k and v views. qkv [n, (n_heads + 2 n_kv_heads) d]
  // is written (attention reads q from it); normed is scratch. CUDA fuses it all for one row.
  virtual void rms_norm_qkv_rope_store(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                       Tensor w_qkv, Tensor b_qkv, const RopeStoreArgs& r) {
    check_rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, w_qkv, b_qkv, r);
    rms_norm_linear(qkv, normed, x, norm_weight, eps, w_qkv, b_qkv);
    const RopeStoreArgs::Qkv h = r.split_qkv(qkv);
    rope_store_kv(h.q, h.k, h.v, r.positions, r.tables(), r.k_cache, r.v_cache, r.slots, r.kv_scales);
  }
  // The MLP's first half: [gate | up] = rms_norm(x) * norm_weight @ w_gate_up^T, then
  // act = silu(gate) * up.   x [n, hidden], w_gate_up [2 * inter, hidden], act [n, inter];
  // normed [n, hidden] and gate_up [n, 2 * inter] are scratch a fusing backend may leave
  // unwritten (CUDA does for one row).
  virtual void rms_norm_gate_up_silu(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight,
                                     float eps, Tensor w_gate_up) {
    rms_norm_linear(gate_up, normed, x, norm_weight, eps, w_gate_up, Tensor());
    silu_mul(act, gate_up);
  }
  // rms_norm_gate_up_silu with any Activation (Gemma: gelu_tanh): [gate | up] = rms_norm(x) *
  // norm_weight @ w_gate_up^T, act = a(gate) * up. Same shapes and scratch rules.
  virtual void rms_norm_gate_up_act(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight,
                                    float eps, Tensor w_gate_up, Activation a) {
    if (a == Activation::silu) return rms_norm_gate_up_silu(act, gate_up, normed, x, norm_weight, eps, w_gate_up);
    rms_norm_linear(gate_up, normed, x, norm_weight, eps, w_gate_up, Tensor());
    gated_act(act, gate_up, a);
  }
  // Rotary embedding in place on q [n, n_heads, d] and k [n, n_kv_heads, d] (rows may be
  // strided), HF rotate_half convention within the first rotary_dim dims (RopeTables).
  // positions [n] i32; t.inv_freq [rotary_dim/2] f32 (scaling already applied), rotary_dim even, <= d.
  virtual void rope(Tensor q, Tensor k, Tensor positions, const RopeTables& t) = 0;
  // out = silu(gate) * up where gate_up = [gate | up].   gate_up [n, 2*inter], out [n, inter]
  virtual void silu_mul(Tensor out, Tensor gate_up) = 0;
  // out = a(gate) * up where gate_up = [gate | up] (Activation), in float32, rounded once.
  // gate_up [n, 2*inter], out [n, inter] (rows may be strided). gated_act(.., silu) == silu_mul.
  virtual void gated_act(Tensor out, Tensor gate_up, Activation a) = 0;
  // x *= s in place.   x [n, d] any float dtype, rows may be strided (Gemma's embedding * sqrt(hidden)).
  virtual void scale(Tensor x, float s) = 0;
  // x = cap * tanh(x / cap) in place.   x [n, d] float32 (Gemma 2's final logit soft-capping), cap > 0.
  virtual void softcap(Tensor x, float cap) = 0;
  // residual += rms_norm(x) * weight over the last dim, in float32, rounded once per element.
  // x [n, d] (rows may be strided), residual [n, d], weight [d]; all one dtype; residual must not
  // overlap x (Gemma's post-attention and post-feed-forward norms).
  virtual void rms_norm_add(Tensor residual, Tensor x, Tensor weight, float eps) = 0;
  // A sublayer's output projection and its post-norm (Gemma 2/3's o_proj + post-attention norm,
  // down_proj + post-feed-forward norm): linear(out, x, w, bias), then rms_norm_add(residual,
  // out, norm_weight, eps) — this default is the definition. out is written (the projection's
  // output, rounded to its dtype, is what the norm reads). Shapes as those two ops. CUDA fuses
  // the two for one row: the batch-1 GEMV's last block applies the norm (cuda/gemv.h).
  virtual void linear_rms_norm_add(Tensor residual, Tensor out, Tensor x, Tensor w, Tensor bias, Tensor norm_weight,
                                   float eps) {
    linear(out, x, w, bias);
    rms_norm_add(residual, out, norm_weight, eps);
  }
  // k_cache[slots[i]] = k[i], same for v.   k, v [n, n_kv_heads, d] (rows may be strided);
  // caches [n_slots, n_kv_heads, d] in k's dtype, or FP8 E4M3: then k_cache[slots[i]] =
  // e4m3(k[i] / s.k) (round to nearest even, saturating at +-448: core/fp8.h), v alike. slots
  // [n] i32. (s defaults to 1.0 in every override too: a float cache, or an FP8 one unscaled.)
  virtual void store_kv(Tensor k_cache, Tensor v_cache, Tensor k, Tensor v, Tensor slots, KvScales s = {}) = 0;
  // rope(q, k, positions, t), then store_kv(k_cache, v_cache, k, v, slots, s), with the
  // same shapes; a backend may fuse the two (CUDA does: one kernel per decode layer, not two).
  virtual void rope_store_kv(Tensor q, Tensor k, Tensor v, Tensor positions, const RopeTables& t, Tensor k_cache,
                             Tensor v_cache, Tensor slots, KvScales s = {}) {
    rope(q, k, positions, t);
    store_kv(k_cache, v_cache, k, v, slots, s);
  }
  // Attention's input stage for layers with q/k norm (Qwen3, Gemma 3), after the qkv projection:
  // rms_norm(q, q, q_norm), rms_norm(k, k, k_norm) per head, in place, then rope_store_kv(q, k, v,
  // ...). Shapes as those ops (q [n, n_heads, d], k, v [n, n_kv_heads, d] views inside qkv;
  // q_norm, k_norm [d]); a backend may fuse the three (CUDA does: one kernel, not three).
  virtual void qk_norm_rope_store(Tensor q, Tensor k, Tensor v, Tensor q_norm, Tensor k_norm, float eps,
                                  Tensor positions, const RopeTables& t, Tensor k_cache, Tensor v_cache,
                                  Tensor slots, KvScales s = {}) {
    rms_norm(q, q, q_norm, eps);
    rms_norm(k, k, k_norm, eps);
    rope_store_kv(q, k, v, positions, t, k_cache, v_cache, slots, s);
  }
  // Attention's whole input stage for layers with q/k norm in one op, so a backend can fuse it
  // (CUDA at one row: the qkv GEMV's last block of each head normalises, rotates and stores it;
  // no qk_norm_rope_store launch): rms_norm_linear(qkv, normed, x, norm_weight, eps, w_qkv, b_qkv),
  // then qk_norm_rope_store on qkv's q, k, v views (RopeStoreArgs::split_qkv) with q_norm, k_norm,
  // the same eps and r's positions, tables, caches, slots and KV scales. Shapes as
  // rms_norm_qkv_rope_store; q_norm, k_norm [head_dim].
  virtual void rms_norm_qkv_qk_norm_rope_store(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                               Tensor w_qkv, Tensor b_qkv, Tensor q_norm, Tensor k_norm,
                                               const RopeStoreArgs& r) {
    check_rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, w_qkv, b_qkv, r);
    rms_norm_linear(qkv, normed, x, norm_weight, eps, w_qkv, b_qkv);
    const RopeStoreArgs::Qkv h = r.split_qkv(qkv);
    qk_norm_rope_store(h.q, h.k, h.v, q_norm, k_norm, eps, r.positions, r.tables(), r.k_cache, r.v_cache, r.slots,
                       r.kv_scales);
  }
  // Causal grouped-query attention over the paged cache (which already holds this step's KV),
  // with o's scale, soft-capping and sliding window (AttentionOptions). The caches are in q's
  // dtype or FP8 E4M3 (read as code * o.kv_scales: KvScales).
  // q [n_tokens, n_heads, d] (rows may be strided), out [n_tokens, n_heads, d]
  virtual void attention(Tensor out, Tensor q, Tensor k_cache, Tensor v_cache, const AttentionBatch& b,
                         const AttentionOptions& o) = 0;
  // out[i] = x[idx[i]].   x [n, d], idx [m] i32, out [m, d]
  virtual void gather_rows(Tensor out, Tensor x, Tensor idx) = 0;
  // dst.flat[pairs[i][0]] = pairs[i][1].   dst i32 contiguous, pairs [n, 2] i32 (flat index, value).
  // Applies a step's page-table writes from the step's one input copy (ModelRunner).
  virtual void scatter_i32(Tensor dst, Tensor pairs) = 0;
  // Applies penalties to logits [n, vocab] f32 in place.
  virtual void apply_penalties(Tensor logits, const PenaltyBatch& p) = 0;
  // out_ids[r] = sample(logits[r]).   logits [n, vocab] f32 (may be modified), out_ids [n] i32.
  // The draw of row r depends only on (seed[r], step[r]) and logits[r]: see sampling_rng.h.
  virtual void sample(Tensor out_ids, Tensor logits, const SamplingBatch& s) = 0;
  // logits[r][tokens[e]] += values[e] for each row's entries (LogitBiasBatch).
  virtual void apply_logit_bias(Tensor logits, const LogitBiasBatch& b) = 0;
  // Log probabilities of raw logits [n, vocab] f32 (read only): see LogprobBatch.
  virtual void logprobs(Tensor logits, const LogprobBatch& b) = 0;
  // FP8 linear (see "FP8 linear" above): out = x @ dequant(w)^T (+ bias), or out += that with
  // accumulate.   x [n, in] (rows may be strided), out [n, out], bias [out] or undefined, all in
  // the activation dtype; out must not overlap x. A backend without it says so in
  // supports_fp8() and the loader refuses FP8 layers on it.
  virtual bool supports_fp8() const { return false; }
  // The per-channel weight quantization of --quantization fp8 (a load step, not a step op):
  // scales[o] = amax(w[o]) / 448 (1 for an all-zero row), codes[o][k] = e4m3(w[o][k] / scales[o]),
  // exactly core/fp8.h's quantize_fp8_per_channel of w's float32 values. w [n, in] f32/f16/bf16,
  // codes [n, in] fp8_e4m3, both contiguous; scales [n] f32. The default quantizes on the host
  // (copies w there and the results back); CUDA quantizes on the device.
  virtual void quantize_fp8_per_channel(Tensor codes, Tensor scales, Tensor w);
  virtual void linear_fp8(Tensor out, Tensor x, const Fp8Weight& w, Tensor bias, bool accumulate);
  // residual += x @ W^T (+ bias): linear_fp8 with accumulate, where the caller's very next op is an
  // FP8 norm fusion (rms_norm_linear_fp8, rms_norm_qkv_rope_store_fp8 or rms_norm_gate_up_act_fp8)
  // of residual with norm_weight and eps into the FP8 linear `next`. A backend may compute that
  // norm's FP8 activations in this product's epilogue and hand them to that op (CUDA past the GEMV
  // batches unless SEAM_FP8_NORM_EPILOGUE=0: cuda/fp8_scale_norm_quantize.h); the caller must then run
  // exactly that op next, on this residual. The default is linear_fp8 alone.
  virtual void linear_fp8_accumulate_before_norm(Tensor residual, Tensor x, const Fp8Weight& w, Tensor bias,
                                                 Tensor norm_weight, float eps, const Fp8Weight& next) {
    (void)norm_weight, (void)eps, (void)next;  // the next op norms residual itself
    linear_fp8(residual, x, w, bias, true);
  }
  // An FP8 layer's norm fusions: rms_norm_linear and rms_norm_gate_up_act with linear_fp8 as the
  // product (same shapes; normed and gate_up are scratch a fusing backend may leave unwritten).
  // These defaults decompose; CUDA fuses the norm, the activation quantization and the GLU into
  // its FP8 GEMV for decode batches (cuda/fp8_gemv.h).
  virtual void rms_norm_linear_fp8(Tensor out, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                   const Fp8Weight& w, Tensor bias) {
    rms_norm(normed, x, norm_weight, eps);
    linear_fp8(out, normed, w, bias, false);
  }
  // `down`: the weight of the linear_fp8 of act the caller runs next (the MLP's down
  // projection), or null. A backend that hands that op act's FP8 codes made here may then leave
  // act itself unwritten (CUDA past the GEMV batches, unless SEAM_FP8_ACT_SKIP=0: act is read by
  // nothing else); the caller must then run exactly that op next and read act nowhere else.
  virtual void rms_norm_gate_up_act_fp8(Tensor act, Tensor gate_up, Tensor normed, Tensor x, Tensor norm_weight,
                                        float eps, const Fp8Weight& w, Activation a,
                                        const Fp8Weight* down = nullptr) {
    (void)down;  // this decomposition writes act
    rms_norm_linear_fp8(gate_up, normed, x, norm_weight, eps, w, Tensor());
    gated_act(act, gate_up, a);
  }
  // An FP8 layer's attention input stage: rms_norm_qkv_rope_store with linear_fp8 as the product
  // (same shapes; w's rows are the [q | k | v] heads). The default decomposes; CUDA fuses RoPE
  // and the KV store into its FP8 GEMV's epilogue for decode batches (cuda/fp8_gemv.h).
  virtual void rms_norm_qkv_rope_store_fp8(Tensor qkv, Tensor normed, Tensor x, Tensor norm_weight, float eps,
                                           const Fp8Weight& w, Tensor bias, const RopeStoreArgs& r) {
    SEAM_CHECK(r.k_cache.defined() && r.k_cache.ndim == 3 && r.n_heads > 0 && qkv.ndim == 2 &&
                   qkv.size(1) == (r.n_heads + 2 * r.k_cache.size(1)) * r.k_cache.size(2),
               "rms_norm_qkv_rope_store_fp8: qkv ", qkv.shape_str(), " is not [n, (n_heads + 2 n_kv_heads) d] of ",
               r.n_heads, " heads and k_cache ", r.k_cache.shape_str());
    rms_norm_linear_fp8(qkv, normed, x, norm_weight, eps, w, bias);
    const RopeStoreArgs::Qkv h = r.split_qkv(qkv);
    rope_store_kv(h.q, h.k, h.v, r.positions, r.tables(), r.k_cache, r.v_cache, r.slots, r.kv_scales);
  }
  // Structured output: for each i < n_masked, logits[rows[i]][t] = -inf for every t < vocab
  // whose bit is clear in bitmask[i] (bit t = word t / 32, bit t % 32; a set bit leaves the
  // logit as it is). logits [n, vocab] f32; bitmask [n_masked, n_words] i32 storage of u32
  // words, n_words >= ceil(vocab / 32), contiguous; rows [n_masked] i32, distinct, in [0, n).
  // Only the constrained rows are listed: the others are not read.
  virtual void apply_token_bitmask(Tensor logits, Tensor bitmask, Tensor rows) = 0;

  // ---- mixture of experts (model/moe_config.h has the layer's math; moe_op_checks.h the
  // argument checks). A backend without them throws a seam::Error naming the op. ----
  // Routing: p = softmax(router_logits[i]) in float32; topk_ids[i] = the k experts of largest p in
  // descending order (ties: lower id first); topk_weights[i] = their p, divided by their sum when
  // `renormalize`. router_logits [n, n_experts] any float dtype (rows may be strided);
  // topk_ids [n, k] i32, topk_weights [n, k] f32, k <= n_experts. A NaN p ranks as -inf, so a
  // row whose logits are not finite (padding) still gets k distinct ids in [0, n_experts).
  virtual void moe_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, bool renormalize);
  // The layer's router and its routing in one op, so a backend can fuse them (CUDA at one row:
  // the router GEMV's last block routes, no moe_route launch): router_logits = x @ w_router^T
  // (linear, no bias), then moe_route(topk_ids, topk_weights, router_logits, renormalize).
  // x [n, hidden]; w_router [n_experts, hidden]; router_logits [n, n_experts] (written too).
  virtual void moe_router_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor x,
                                Tensor w_router, bool renormalize) {
    linear(router_logits, x, w_router, Tensor());
    moe_route(topk_ids, topk_weights, router_logits, renormalize);
  }
  // The layer's input norm, router and routing in one op, so a backend can fuse the norm too
  // (CUDA at one row: the router GEMV normalises x as rms_norm does and writes normed; the
  // rms_norm launch drops out): normed = rms_norm(x) * norm_weight (written: the experts read
  // it), then moe_router_route(topk_ids, topk_weights, router_logits, normed, w_router,
  // renormalize). x, normed [n, hidden]; norm_weight [hidden].
  virtual void moe_norm_router_route(Tensor topk_ids, Tensor topk_weights, Tensor router_logits, Tensor normed,
                                     Tensor x, Tensor norm_weight, float eps, Tensor w_router, bool renormalize) {
    rms_norm(normed, x, norm_weight, eps);
    moe_router_route(topk_ids, topk_weights, router_logits, normed, w_router, renormalize);
  }
  // out[i] += sum_j topk_weights[i][j] * down_e(silu(gate_e x[i]) * up_e x[i]), e = topk_ids[i][j],
  // where [gate_e | up_e] = w_gate_up[e] and down_e = w_down[e]; silu(gate) * up is rounded to x's
  // dtype (as a dense MLP's act), the weighted sum is formed in float32 and added to out once (as
  // linear_accumulate). x, out [n, hidden] (rows may be strided; out must not overlap x);
  // w_gate_up [n_experts, 2 * inter, hidden]; w_down [n_experts, hidden, inter]; topk_ids [n, k] i32
  // (an id outside [0, n_experts) reads expert 0: padded rows), topk_weights [n, k] f32;
  // scratch: MoeScratch (a backend that groups rows by expert needs expert_out and index too).
  virtual void moe_experts(Tensor out, Tensor x, Tensor w_gate_up, Tensor w_down, Tensor topk_ids,
                           Tensor topk_weights, const MoeScratch& scratch);
  // out[i] += sigmoid(gate[i][0]) * y[i] (Qwen2-MoE's gated shared expert).
  // out, y [n, hidden] (out must not overlap y); gate [n, 1]; one dtype.
  virtual void moe_shared_expert_add(Tensor out, Tensor y, Tensor gate);

  // ---- tensor parallelism (backend/communicator.h) ----
  // The rank's communicator, not owned; null (the default) for a single rank, whose forward
  // never calls the two collectives below (TP 1 adds no op to the step).
  void set_communicator(Communicator* comm) { comm_ = comm; }
  Communicator* communicator() const { return comm_; }
  // x = the sum of every rank's x, in place (after a row-parallel linear). An op of the step:
  // recorded by a CPU capture, on the capturing stream under CUDA.
  virtual void all_reduce_sum(Tensor x);
  // out [n, size * c] = the ranks' in [n, c] side by side (rank r's in -> columns
  // [r * c, (r + 1) * c)): the vocabulary-parallel lm_head's logits. scratch holds
  // size * n * c elements of out's dtype (the rank-major gather before the transpose).
  virtual void all_gather_cols(Tensor out, Tensor in, Tensor scratch);
  // The vocabulary-parallel embedding: out[i] = table[ids[i] - vocab_begin] where that row is
  // this rank's (table holds rows [vocab_begin, vocab_begin + table.size(0)) of the model's),
  // else zeros; Backend::all_reduce_sum(out) then gives every rank the whole embedding.
  virtual void embedding_shard(Tensor out, Tensor ids, Tensor table, int64_t vocab_begin);

 protected:
  Communicator* comm_ = nullptr;

  // op_checks::rms_norm_qkv_rope_store on this backend's device (backend.cpp: backend.h does not
  // include op_checks.h, which includes it).
  void check_rms_norm_qkv_rope_store(const Tensor& qkv, const Tensor& normed, const Tensor& x,
                                     const Tensor& norm_weight, const Tensor& w_qkv, const Tensor& b_qkv,
                                     const RopeStoreArgs& r) const;

 public:
  // ---- graphs ----
  virtual void begin_capture() = 0;
  virtual std::unique_ptr<Graph> end_capture() = 0;
  virtual void replay(const Graph& g) = 0;
  virtual bool capturing() const = 0;

  // ---- start-up ----
  // GEMM tuning at start-up (CUDA; other backends ignore it): from this call until
  // end_startup(), a GEMM plan created for >= min_rows rows outside graph capture times
  // the library's first n_candidates algorithms and keeps the fastest (the warm-up runs
  // before each graph capture create the plans). May allocate a scratch buffer, freed by
  // end_startup().
  struct GemmTuning {
    int min_rows = 256;
    int n_candidates = 8;
    std::string cache_path;  // results kept across runs (gemm_tuning_cache.h); empty: none
  };
  virtual void begin_gemm_tuning(const GemmTuning& t) { (void)t; }
  // Start-up is over (graphs captured and sealed): no more tuning or start-up-only
  // allocation. Prints what start-up tuning did, if any.
  virtual void end_startup() {}

  // ---- step timer (engine stats gpu_ms_per_step / gpu_busy_fraction) ----
  // The device time of the work enqueued between timer_begin() and timer_end(): on CUDA two
  // events recorded on the stream, so the span runs from the GPU reaching the first mark to it
  // passing the second, idle gaps between ops included (an upper bound on busy time). Marks
  // are never enqueued while capturing (a mark inside a graph would be baked into it), so the
  // runner places them around a whole step, replays included. timer_elapsed_ms() is the last
  // begin..end span; call it after synchronize() (it then never waits). A synchronous backend
  // (CPU) runs each op as it is called: its span is the host wall time between the marks.
  virtual void timer_begin() = 0;
  virtual void timer_end() = 0;
  virtual double timer_elapsed_ms() const = 0;

  // ---- forward mark (engine stats grammar_mask_exposed_ms_total) ----
  // mark_forward() is called once the step's forward (replays or eager ops, logits included)
  // is enqueued; forward_done() then says whether the device has passed that mark: the
  // runner builds the step's grammar masks on the host in between and asks, so it knows
  // whether that host work was hidden behind the GPU. CUDA: an event recorded on the stream
  // and cudaEventQuery (never blocks). A synchronous backend (CPU) has finished every op
  // when it returns, so its forward is always done: its mask work is never hidden.
  virtual void mark_forward() {}
  virtual bool forward_done() { return true; }
};

}  // namespace seam
