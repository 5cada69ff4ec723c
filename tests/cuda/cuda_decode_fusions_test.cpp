// The batch-1 decode fusions of the q/k-norm families (Qwen3, Gemma 3), CUDA against the CPU
// reference (the definition) and against the unfused CUDA ops they replace:
//  - qk_norm_rope_store: per-head q/k RMSNorm + RoPE (full and partial rotary, LongRoPE's second
//    table) + KV store in one kernel, eagerly and replayed inside a captured graph with new
//    positions and slots each replay;
//  - split-KV decode attention whose last split merges the partials (no combine kernel): batch 1
//    at the benchmark families' head shapes over contexts of one to many splits, eager then
//    replayed from a graph (each launch must leave the arrival counters zero for the next), and
//    rows of different lengths in one launch. That merge is off by default (measured slower,
//    attention_decode.cu), so this binary turns it on before the first launch reads the switch.
#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "cuda_attention_fixture.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

// Read once, at the first decode launch (a static in attention_decode.cu): set before any test runs.
const int kFusedCombineOn = (setenv("SEAM_DECODE_FUSED_COMBINE", "1", 1), 0);

class CudaDecodeFusions : public CudaTest {};

const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

struct QkCase {
  int64_t heads, kv, d, rot;
  bool long_table;
};

// The reference of qk_norm_rope_store on host copies: the CPU ops, with every intermediate the
// device stores (the normed q/k, the rotated q/k) rounded to t. Slots outside the cache skip.
void reference_qk_norm_rope_store(CpuBackend& cpu, DType t, const QkCase& c, int64_t n, std::vector<float>& qkv,
                                  std::vector<float>& qn, std::vector<float>& kn, std::vector<int32_t>& pos,
                                  HiLoTable& f, HiLoTable& f_long, int long_from,
                                  std::vector<int32_t>& slots, std::vector<float>& kc, std::vector<float>& vc,
                                  int64_t n_slots) {
  const int64_t d = c.d, width = (c.heads + 2 * c.kv) * d;
  Tensor r = host_view(qkv, {n, width});
  auto heads_of = [&](Tensor x, int64_t from, int64_t count) {
    return x.slice_cols(from * d, count * d).unflatten_last(count, d);
  };
  const Tensor q = heads_of(r, 0, c.heads), k = heads_of(r, c.heads, c.kv);
  cpu.rms_norm(q, q, host_view(qn, {d}), 1e-6f);
  cpu.rms_norm(k, k, host_view(kn, {d}), 1e-6f);
  auto round_in_place = [&] {
    const auto rounded = round_to(qkv, t);
    std::copy(rounded.begin(), rounded.end(), qkv.begin());
  };
  round_in_place();
  const int64_t h = c.rot / 2;
  const RopeTables tables = c.long_table ? RopeTables(host_view(f.hi, {h}), host_view(f_long.hi, {h}), long_from,
                                                      host_view(f.lo, {h}), host_view(f_long.lo, {h}))
                                         : RopeTables(host_view(f.hi, {h}), Tensor(), 0, host_view(f.lo, {h}), Tensor());
  cpu.rope(q, k, host_index(pos, {n}), tables);
  round_in_place();
  for (int64_t i = 0; i < n; ++i) {  // the CPU op asserts on bad slots: store the valid rows only
    if (slots[size_t(i)] < 0 || slots[size_t(i)] >= n_slots) continue;
    std::vector<int32_t> one = {slots[size_t(i)]};
    const Tensor row = r.slice_rows(i, 1);
    cpu.store_kv(host_view(kc, {n_slots, c.kv, d}), host_view(vc, {n_slots, c.kv, d}), heads_of(row, c.heads, c.kv),
                 heads_of(row, c.heads + c.kv, c.kv), host_index(one, {1}));
  }
}

// Caches: NaN exactly where the reference left them NaN (unwritten slots), close elsewhere.
void expect_caches(const std::vector<float>& got, const std::vector<float>& ref, Tolerance tol, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  std::vector<float> g, r;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::isnan(got[i]), std::isnan(ref[i])) << what << " element " << i;
    if (std::isnan(ref[i])) continue;
    g.push_back(got[i]);
    r.push_back(ref[i]);
  }
  EXPECT_FALSE(g.empty()) << what;
  expect_close(g, r, tol, what);
}

// Qwen3-8B (32 / 8 heads of 128), Gemma-3-4b (8 / 4 of 256), a partial-rotary LongRoPE shape
// (odd head count per block, 64 of 96 dims rotate) and a tiny one (d 16, a warp's lanes idle).
const QkCase kQkCases[] = {{32, 8, 128, 128, false}, {8, 4, 256, 256, false}, {5, 1, 96, 64, true},
                           {4, 2, 16, 16, false}};

TEST_F(CudaDecodeFusions, QkNormRopeStoreMatchesCpuAndTheUnfusedOps) {
  for (DType t : kDtypes)
    for (const QkCase& c : kQkCases)
      for (int64_t n : {1, 6}) {
        SCOPED_TRACE(std::string(short_name(t)) + " heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv) +
                     " d " + std::to_string(c.d) + " rot " + std::to_string(c.rot) + " n " + std::to_string(n));
        const int64_t d = c.d, width = (c.heads + 2 * c.kv) * d, n_slots = 24;
        // q/k far from unit scale, as a projection's output is: the norm must matter.
        auto qkv_h = round_to(random_normal(size_t(n * width), rng, 7.f), t);
        auto qn_h = round_to(random_normal(size_t(d), rng), t), kn_h = round_to(random_normal(size_t(d), rng), t);
        std::vector<int32_t> pos(static_cast<size_t>(n)), perm(static_cast<size_t>(n_slots));
        std::uniform_int_distribution<int32_t> pick(0, 100000);  // rope_angle.h's reduction at large positions
        for (auto& p : pos) p = pick(rng);
        pos[0] = 3;  // below long_from: the short table
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        std::vector<int32_t> slots(perm.begin(), perm.begin() + n);
        if (n > 1) slots[1] = int32_t(n_slots);  // out of range: skipped
        HiLoTable fh = hi_lo_table(c.rot / 2, 10000.0), flh = hi_lo_table(c.rot / 2, 400000.0);  // hi + lo
        auto &f = fh.hi, &f_long = flh.hi;
        const int long_from = 1000;

        auto heads_of = [&](Tensor x, int64_t from, int64_t count) {
          return x.slice_cols(from * d, count * d).unflatten_last(count, d);
        };
        Tensor qn = upload(qn_h, t, {d}), kn = upload(kn_h, t, {d});
        Tensor pos_d = upload_index(pos, {n}), slots_d = upload_index(slots, {n});
        Tensor f_d = upload(f, DType::f32, {c.rot / 2}), fl_d = upload(f_long, DType::f32, {c.rot / 2});
        Tensor flo_d = upload(fh.lo, DType::f32, {c.rot / 2}), fllo_d = upload(flh.lo, DType::f32, {c.rot / 2});
        const RopeTables tables = c.long_table ? RopeTables(f_d, fl_d, long_from, flo_d, fllo_d)
                                               : RopeTables(f_d, Tensor(), 0, flo_d, Tensor());
        // The fused op, and the unfused ops it replaces, on the same inputs.
        Tensor qkv = upload(qkv_h, t, {n, width}), qkv_u = upload(qkv_h, t, {n, width});
        Tensor kc = empty(t, {n_slots, c.kv, d}), vc = empty(t, {n_slots, c.kv, d});  // NaN-poisoned
        Tensor kc_u = empty(t, {n_slots, c.kv, d}), vc_u = empty(t, {n_slots, c.kv, d});
        gpu->qk_norm_rope_store(heads_of(qkv, 0, c.heads), heads_of(qkv, c.heads, c.kv),
                                heads_of(qkv, c.heads + c.kv, c.kv), qn, kn, 1e-6f, pos_d, tables, kc, vc, slots_d);
        const Tensor qu = heads_of(qkv_u, 0, c.heads), ku = heads_of(qkv_u, c.heads, c.kv);
        gpu->rms_norm(qu, qu, qn, 1e-6f);
        gpu->rms_norm(ku, ku, kn, 1e-6f);
        gpu->rope_store_kv(qu, ku, heads_of(qkv_u, c.heads + c.kv, c.kv), pos_d, tables, kc_u, vc_u, slots_d);

        auto ref = qkv_h;
        std::vector<float> kc_ref(size_t(n_slots * c.kv * d), NAN), vc_ref = kc_ref;
        reference_qk_norm_rope_store(cpu, t, c, n, ref, qn_h, kn_h, pos, fh, flh, long_from, slots, kc_ref, vc_ref,
                                     n_slots);
        const Tolerance tol = tolerance_for(t, {1e-5, 5e-6});
        expect_close(download(qkv), ref, tol, "qk_norm_rope_store qkv vs cpu");
        expect_caches(download(kc), kc_ref, tol, "qk_norm_rope_store k_cache vs cpu");
        expect_caches(download(vc), vc_ref, {0, 0}, "qk_norm_rope_store v_cache vs cpu");  // v: copied
        // Against the unfused CUDA ops: only each head's sum of squares is summed in another
        // order, so f32 agrees to its rounding and f16/bf16 to one rounding step of the output.
        expect_close(download(qkv), download(qkv_u), tol, "qk_norm_rope_store qkv vs unfused");
        expect_caches(download(kc), download(kc_u), tol, "qk_norm_rope_store k_cache vs unfused");
        expect_caches(download(vc), download(vc_u), {0, 0}, "qk_norm_rope_store v_cache vs unfused");
      }
}

// A decode step's use: captured once for one token, replayed with the token's new position and
// slot written into the same device buffers (graph rule: per-step values live in buffers).
TEST_F(CudaDecodeFusions, QkNormRopeStoreReplaysInAGraph) {
  const DType t = DType::bf16;
  const QkCase c{8, 4, 256, 256, false};
  const int64_t d = c.d, width = (c.heads + 2 * c.kv) * d, n_slots = 16;
  Tensor qkv = empty(t, {1, width}), qn = empty(t, {d}), kn = empty(t, {d});
  Tensor pos_d = empty(DType::i32, {1}), slots_d = empty(DType::i32, {1});
  Tensor kc = empty(t, {n_slots, c.kv, d}), vc = empty(t, {n_slots, c.kv, d});
  HiLoTable f = hi_lo_table(d / 2, 1000000.0), unused;  // no long table
  Tensor f_d = upload(f.hi, DType::f32, {d / 2}), flo_d = upload(f.lo, DType::f32, {d / 2});
  auto heads_of = [&](Tensor x, int64_t from, int64_t count) {
    return x.slice_cols(from * d, count * d).unflatten_last(count, d);
  };
  gpu->begin_capture();
  gpu->qk_norm_rope_store(heads_of(qkv, 0, c.heads), heads_of(qkv, c.heads, c.kv), heads_of(qkv, c.heads + c.kv, c.kv),
                          qn, kn, 1e-6f, pos_d, RopeTables(f_d, Tensor(), 0, flo_d, Tensor()), kc, vc, slots_d);
  std::unique_ptr<Graph> g = gpu->end_capture();
  auto qn_h = round_to(random_normal(size_t(d), rng), t), kn_h = round_to(random_normal(size_t(d), rng), t);
  auto put = [&](const Tensor& dst, const std::vector<float>& v) {
    Tensor tmp = upload(v, dst.dtype, {dst.numel()});
    gpu->copy_d2d(dst.data, tmp.data, dst.nbytes());
  };
  put(qn, qn_h);
  put(kn, kn_h);
  std::vector<float> kc_ref(size_t(n_slots * c.kv * d), NAN), vc_ref = kc_ref;
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("replay " + std::to_string(step));
    auto qkv_h = round_to(random_normal(size_t(width), rng, 5.f), t);
    std::vector<int32_t> pos = {17 + 49999 * step}, slots = {int32_t(2 + 5 * step)};
    put(qkv, qkv_h);
    gpu->copy_h2d(pos_d.data, pos.data(), 4);
    gpu->copy_h2d(slots_d.data, slots.data(), 4);
    gpu->replay(*g);
    gpu->synchronize();
    reference_qk_norm_rope_store(cpu, t, c, 1, qkv_h, qn_h, kn_h, pos, f, unused, 0, slots, kc_ref, vc_ref, n_slots);
    expect_close(download(qkv), qkv_h, tolerance_for(t), "qkv (graph)");
    expect_caches(download(kc), kc_ref, tolerance_for(t), "k_cache (graph)");
    expect_caches(download(vc), vc_ref, {0, 0}, "v_cache (graph)");
  }
}

class CudaDecodeMerge : public CudaAttention {};

// Contexts from one key (one split: the block writes out directly) through 1-3 splits of 64 keys
// (the decode benchmark's 128 + 32) to many; each check runs eagerly and then from a graph, and
// the calls follow each other on the same counters.
TEST_F(CudaDecodeMerge, BatchOneDecodeAtTheBenchmarkShapes) {
  const Shape shapes[] = {{8, 4, 256},     // gemma-3-4b
                          {16, 8, 256},    // gemma-2-9b
                          {32, 32, 96},    // phi-3.5-mini
                          {32, 8, 128}};   // llama-3.1-8b
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : shapes)
      for (int prefix : {0, 63, 64, 130, 159, 700, 5000})
        check(t, sh, {{1, prefix}}, 0, false, "decode prefix " + std::to_string(prefix), std::nullopt, 0, {},
              /*graph=*/true);
}

// Rows whose splits differ in one launch: some write out directly, some merge 2 splits, some many;
// with a window and a soft-cap (Gemma 2) as well.
TEST_F(CudaDecodeMerge, RowsOfDifferentLengthsInOneLaunch) {
  const std::vector<Seq> rows = {{1, 3}, {1, 100}, {1, 2000}, {1, 64}, {1, 129}, {1, 700}};
  for (DType t : {DType::bf16, DType::f16}) {
    check(t, Shape{8, 4, 256}, rows, 0, false, "rows", std::nullopt, 0, {}, /*graph=*/true);
    AttentionOptions gemma2;
    gemma2.sliding_window = 512;
    gemma2.logit_softcap = 50.f;
    check(t, Shape{16, 8, 256}, rows, 0, false, "rows window softcap", std::nullopt, 0, gemma2, /*graph=*/true);
  }
}

}  // namespace
}  // namespace seam::test
