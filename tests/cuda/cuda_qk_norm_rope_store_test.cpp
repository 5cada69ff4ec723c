// qk_norm_rope_store's four kernels and the default rule between two of them (qk_norm_rope_store.h): the shared-angle and staged forms must
// store the per-head kernel's bits (the vector form its values to the dtype's rounding) in qkv and
// in both caches, at decode and prefill sizes, for every float dtype, full and partial rotary (a rotary half not a multiple of 16: pairs and pass-through dims
// across lanes), LongRoPE's second table, heads of 16 to 256 dims (idle lanes; the largest form) and a
// head dim past the form's limit (the launcher runs the per-head kernel), heads whose rows are not
// 16-byte pieces (the staged form falls back), blocks of tokens the last one partial, slots out of
// range skipped; and each must replay from a captured graph with new positions and slots. The per-head
// kernel itself is held against the CPU ops by cuda_decode_fusions_test.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "backend/cuda/qk_norm_rope_store.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaQkNormRopeStore : public CudaTest {
 protected:
  // A decode step's use of `form`, captured, against the per-head kernel run eagerly.
  void replays_in_a_graph(cuda::QkNormRopeKernel form);
};

struct Shape {
  int64_t heads, kv, d, rot;
  bool long_table;
};

// Qwen3-30B-A3B (32 / 4 of 128), Qwen3-8B (32 / 8), Gemma-3 (8 / 4 of 256), a partial-rotary
// LongRoPE shape (half 32 of 96 dims; odd heads a block), a tiny one (d 16), d 64 (the form's
// 2-values-a-lane instance), a partial-rotary d 128 with half 48 (rotary pairs and pass-through
// dims held by other lanes than those that read them), and d 320 (over the shared form's 256: it
// must fall back, not fail), and d 36 (rows of 72 bytes at 2-byte dtypes: the staged form falls
// back there; at f32, 144 bytes, it runs).
const Shape kShapes[] = {{32, 4, 128, 128, false}, {32, 8, 128, 128, false}, {8, 4, 256, 256, false},
                         {5, 1, 96, 64, true},     {4, 2, 16, 16, false},    {8, 2, 64, 64, false},
                         {4, 1, 128, 96, false},   {3, 1, 320, 320, false},  {6, 2, 36, 36, false}};
const DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

// Everything one launch reads and writes, made twice from the same draws.
struct Case {
  Tensor qkv, kc, vc;
};

TEST_F(CudaQkNormRopeStore, SharedAndStagedStoreThePerHeadKernelsBits) {
  EXPECT_TRUE(cuda::qk_norm_rope_shared_applies(256));
  EXPECT_FALSE(cuda::qk_norm_rope_shared_applies(320));
  for (DType t : kDtypes)
    for (const Shape& c : kShapes)
      for (int64_t n : {1, 7, 300, 1000}) {  // 1,000: the vector form's several tokens a block, the last partial
        SCOPED_TRACE(std::string(short_name(t)) + " heads " + std::to_string(c.heads) + "/" + std::to_string(c.kv) +
                     " d " + std::to_string(c.d) + " rot " + std::to_string(c.rot) + " n " + std::to_string(n));
        const int64_t d = c.d, width = (c.heads + 2 * c.kv) * d, n_slots = n + 5;
        auto qkv_h = round_to(random_normal(size_t(n * width), rng, 7.f), t);
        auto qn_h = round_to(random_normal(size_t(d), rng), t), kn_h = round_to(random_normal(size_t(d), rng), t);
        std::vector<int32_t> pos(static_cast<size_t>(n)), perm(static_cast<size_t>(n_slots));
        std::uniform_int_distribution<int32_t> pick(0, 100000);  // the angle reduction at large positions
        for (auto& p : pos) p = pick(rng);
        pos[0] = 3;  // below long_from: the short table
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        std::vector<int32_t> slots(perm.begin(), perm.begin() + n);  // distinct: no two rows race on one slot
        if (n > 1) slots[1] = int32_t(n_slots);                      // out of range: skipped
        if (n > 2) slots[2] = -1;
        const int64_t h = c.rot / 2;
        HiLoTable f = hi_lo_table(h, 10000.0), fl = hi_lo_table(h, 400000.0);
        Tensor f_d = upload(f.hi, DType::f32, {h}), flo_d = upload(f.lo, DType::f32, {h});
        Tensor fl_d = upload(fl.hi, DType::f32, {h}), fllo_d = upload(fl.lo, DType::f32, {h});
        const RopeTables tables =
            c.long_table ? RopeTables(f_d, fl_d, 1000, flo_d, fllo_d) : RopeTables(f_d, Tensor(), 0, flo_d, Tensor());
        Tensor qn = upload(qn_h, t, {d}), kn = upload(kn_h, t, {d});
        Tensor pos_d = upload_index(pos, {n}), slots_d = upload_index(slots, {n});
        auto heads_of = [&](Tensor x, int64_t from, int64_t count) {
          return x.slice_cols(from * d, count * d).unflatten_last(count, d);
        };
        auto run = [&](cuda::QkNormRopeKernel kernel) {
          Case r{upload(qkv_h, t, {n, width}), empty(t, {n_slots, c.kv, d}), empty(t, {n_slots, c.kv, d})};
          cuda::launch_qk_norm_rope_store(heads_of(r.qkv, 0, c.heads), heads_of(r.qkv, c.heads, c.kv),
                                          heads_of(r.qkv, c.heads + c.kv, c.kv), qn, kn, 1e-6f, pos_d, tables, r.kc,
                                          r.vc, slots_d, stream(), kernel);
          return r;
        };
        const Case a = run(cuda::QkNormRopeKernel::per_head), b = run(cuda::QkNormRopeKernel::shared_angles);
        const Case st = run(cuda::QkNormRopeKernel::staged), ve = run(cuda::QkNormRopeKernel::vector);
        gpu->synchronize();
        // Which shapes the staged kernel itself runs (else the test would compare a fallback).
        {
          Tensor x = empty(t, {n, width});
          const bool pieces = (d * int64_t(dtype_size(t))) % 16 == 0 && d <= 256;
          EXPECT_EQ(cuda::qk_norm_rope_staged_applies(heads_of(x, 0, c.heads), heads_of(x, c.heads, c.kv),
                                                      heads_of(x, c.heads + c.kv, c.kv), a.kc, a.vc),
                    pieces);
        }
        // Which shapes the vector kernel runs: 16-byte rows, full rotary, d / kVec a power of two
        // from 2 to 32 lanes.
        {
          Tensor x = empty(t, {n, width});
          const int64_t v = 16 / int64_t(dtype_size(t)), lanes = d % v == 0 ? d / v : 0;
          const bool runs = c.rot == d && lanes >= 2 && lanes <= 32 && (lanes & (lanes - 1)) == 0;
          EXPECT_EQ(cuda::qk_norm_rope_vector_applies(heads_of(x, 0, c.heads), heads_of(x, c.heads, c.kv),
                                                      heads_of(x, c.heads + c.kv, c.kv), a.kc, a.vc, tables),
                    runs);
        }
        auto same_bits = [](const std::vector<float>& x, const std::vector<float>& y, const char* what) {
          ASSERT_EQ(x.size(), y.size());
          size_t n_diff = 0, first = 0;
          for (size_t i = 0; i < x.size(); ++i)
            if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0 && n_diff++ == 0) first = i;
          EXPECT_EQ(n_diff, 0u) << what << ": " << n_diff << " of " << x.size() << " differ; first at " << first
                                << " per-head " << x[first] << " shared " << y[first];
        };
        const auto qkv_a = download(a.qkv), kc_a = download(a.kc);
        same_bits(qkv_a, download(b.qkv), "qkv");
        same_bits(kc_a, download(b.kc), "k_cache");
        same_bits(download(a.vc), download(b.vc), "v_cache");
        same_bits(qkv_a, download(st.qkv), "staged qkv");
        same_bits(kc_a, download(st.kc), "staged k_cache");
        same_bits(download(a.vc), download(st.vc), "staged v_cache");
        // The vector form sums a head's squares in another order: the two float32 sums of d
        // squares differ by at most ~d 2^-23 relative, so the scales by delta <= d 2^-23 (the
        // square root halves it; its own roundings are inside the margin), a normed value by one
        // T spacing u |x| (a rounding flipped) plus delta |x|; a rotated value then moves by at
        // most (u + delta)(|x0| + |x1|) <= 2 (u + delta) max|r| plus its own rounding u max|r|:
        // each value within (3 u + 2 delta) of the head's largest magnitude (the per-head
        // kernel's). At 2-byte dtypes delta is far below u, so nearly all values are bit-equal.
        auto close_by_head = [&](const std::vector<float>& x, const std::vector<float>& y, const char* what) {
          ASSERT_EQ(x.size(), y.size());
          const float ulp = t == DType::f32 ? 0x1p-23f : t == DType::f16 ? 0x1p-10f : 0x1p-7f;
          size_t n_far = 0, n_diff = 0, first = 0;
          for (size_t h0 = 0; h0 < x.size(); h0 += size_t(d)) {
            float big = 0.f;
            for (size_t i = h0; i < h0 + size_t(d); ++i)
              if (std::isfinite(x[i])) big = std::max(big, std::fabs(x[i]));
            for (size_t i = h0; i < h0 + size_t(d); ++i) {
              if (std::memcmp(&x[i], &y[i], sizeof(float)) == 0) continue;
              ++n_diff;
              if (!(std::fabs(x[i] - y[i]) <= (3.f * ulp + 2.f * float(d) * 0x1p-23f) * big) && n_far++ == 0) first = i;
            }
          }
          EXPECT_EQ(n_far, 0u) << what << ": " << n_far << " past the bound; first at " << first << " per-head "
                               << x[first] << " vector " << y[first];
          if (t != DType::f32) EXPECT_LE(n_diff * 100, x.size()) << what << ": " << n_diff << " differ";
        };
        close_by_head(qkv_a, download(ve.qkv), "vector qkv");
        close_by_head(kc_a, download(ve.kc), "vector k_cache");
        same_bits(download(a.vc), download(ve.vc), "vector v_cache");
        // Not vacuous: the kernels normalised and rotated (q changed), and stored the valid rows.
        EXPECT_NE(std::memcmp(qkv_a.data(), qkv_h.data(), size_t(d) * sizeof(float)), 0);
        const int64_t row = int64_t(slots[0]) * c.kv * d;
        EXPECT_FALSE(std::isnan(kc_a[size_t(row)]));
      }
}

// The default rule (by_tokens): shared_angles' bits below kQkNormVectorTokens tokens and the vector
// form's from there on, at Qwen3-30B-A3B's heads (where both forms apply).
TEST_F(CudaQkNormRopeStore, ByTokensTakesEachFormOnItsSideOfTheThreshold) {
  const DType t = DType::bf16;
  const int64_t heads = 32, kv = 4, d = 128, width = (heads + 2 * kv) * d;
  HiLoTable f = hi_lo_table(d / 2, 1000000.0);
  Tensor f_d = upload(f.hi, DType::f32, {d / 2}), flo_d = upload(f.lo, DType::f32, {d / 2});
  const RopeTables tables(f_d, Tensor(), 0, flo_d, Tensor());
  Tensor qn = upload(round_to(random_normal(size_t(d), rng), t), t, {d});
  Tensor kn = upload(round_to(random_normal(size_t(d), rng), t), t, {d});
  for (const int64_t n : {cuda::kQkNormVectorTokens - 1, cuda::kQkNormVectorTokens}) {
    SCOPED_TRACE("tokens " + std::to_string(n));
    const auto qkv_h = round_to(random_normal(size_t(n * width), rng, 5.f), t);
    std::vector<int32_t> pos(static_cast<size_t>(n)), slots(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = slots[size_t(i)] = int32_t(i);
    Tensor pos_d = upload_index(pos, {n}), slots_d = upload_index(slots, {n});
    auto run = [&](cuda::QkNormRopeKernel kernel) {
      Tensor qkv = upload(qkv_h, t, {n, width}), kc = empty(t, {n, kv, d}), vc = empty(t, {n, kv, d});
      cuda::launch_qk_norm_rope_store(qkv.slice_cols(0, heads * d).unflatten_last(heads, d),
                                      qkv.slice_cols(heads * d, kv * d).unflatten_last(kv, d),
                                      qkv.slice_cols((heads + kv) * d, kv * d).unflatten_last(kv, d), qn, kn, 1e-6f,
                                      pos_d, tables, kc, vc, slots_d, stream(), kernel);
      gpu->synchronize();
      return std::make_pair(download(qkv), download(kc));
    };
    const auto rule = run(cuda::QkNormRopeKernel::by_tokens);
    const auto shared = run(cuda::QkNormRopeKernel::shared_angles), vector = run(cuda::QkNormRopeKernel::vector);
    ASSERT_NE(shared.first, vector.first) << "the forms must differ somewhere, else the test tells nothing";
    const auto& want = n >= cuda::kQkNormVectorTokens ? vector : shared;
    EXPECT_TRUE(rule.first == want.first) << "qkv";
    EXPECT_TRUE(rule.second == want.second) << "k_cache";
  }
}

// A decode step's use, as the per-head kernel's graph test: captured once, replayed with new
// positions, slots and inputs written into the same buffers; each replay's result must be the
// per-head kernel's, run eagerly on the same inputs.
TEST_F(CudaQkNormRopeStore, SharedAnglesReplaysInAGraph) { replays_in_a_graph(cuda::QkNormRopeKernel::shared_angles); }
TEST_F(CudaQkNormRopeStore, StagedReplaysInAGraph) { replays_in_a_graph(cuda::QkNormRopeKernel::staged); }
TEST_F(CudaQkNormRopeStore, VectorReplaysInAGraph) { replays_in_a_graph(cuda::QkNormRopeKernel::vector); }

void CudaQkNormRopeStore::replays_in_a_graph(cuda::QkNormRopeKernel form) {
  const DType t = DType::bf16;
  const Shape c{32, 4, 128, 128, false};
  const int64_t d = c.d, width = (c.heads + 2 * c.kv) * d, n = 4, n_slots = 16;
  HiLoTable f = hi_lo_table(d / 2, 1000000.0);
  Tensor f_d = upload(f.hi, DType::f32, {d / 2}), flo_d = upload(f.lo, DType::f32, {d / 2});
  const RopeTables tables(f_d, Tensor(), 0, flo_d, Tensor());
  auto heads_of = [&](Tensor x, int64_t from, int64_t count) {
    return x.slice_cols(from * d, count * d).unflatten_last(count, d);
  };
  Tensor qkv = empty(t, {n, width}), qn = empty(t, {d}), kn = empty(t, {d});
  Tensor pos_d = empty(DType::i32, {n}), slots_d = empty(DType::i32, {n});
  Tensor kc = empty(t, {n_slots, c.kv, d}), vc = empty(t, {n_slots, c.kv, d});
  auto launch = [&](Tensor x, Tensor k_cache, Tensor v_cache, cuda::QkNormRopeKernel kernel) {
    cuda::launch_qk_norm_rope_store(heads_of(x, 0, c.heads), heads_of(x, c.heads, c.kv),
                                    heads_of(x, c.heads + c.kv, c.kv), qn, kn, 1e-6f, pos_d, tables, k_cache, v_cache,
                                    slots_d, stream(), kernel);
  };
  gpu->begin_capture();
  launch(qkv, kc, vc, form);
  std::unique_ptr<Graph> g = gpu->end_capture();
  write(qn, round_to(random_normal(size_t(d), rng), t));
  write(kn, round_to(random_normal(size_t(d), rng), t));
  Tensor qkv_e = empty(t, {n, width}), kc_e = empty(t, {n_slots, c.kv, d}), vc_e = empty(t, {n_slots, c.kv, d});
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("replay " + std::to_string(step));
    const auto qkv_h = round_to(random_normal(size_t(n * width), rng, 5.f), t);
    std::vector<int32_t> pos(n), slots(n);
    for (int64_t i = 0; i < n; ++i) {
      pos[size_t(i)] = int32_t(17 + 49999 * step + i);
      slots[size_t(i)] = int32_t((3 * step + 4 * i) % n_slots);
    }
    write(qkv, qkv_h);
    write(qkv_e, qkv_h);
    gpu->copy_h2d(pos_d.data, pos.data(), size_t(n) * 4);
    gpu->copy_h2d(slots_d.data, slots.data(), size_t(n) * 4);
    gpu->replay(*g);
    // The vector form against itself run eagerly (its values are the per-head kernel's to T's
    // rounding: the test above); the others against the per-head kernel's bits.
    launch(qkv_e, kc_e, vc_e, form == cuda::QkNormRopeKernel::vector ? form : cuda::QkNormRopeKernel::per_head);
    gpu->synchronize();
    const auto got = download(qkv), want = download(qkv_e);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "qkv";
    EXPECT_NE(std::memcmp(got.data(), qkv_h.data(), got.size() * sizeof(float)), 0) << "qkv unchanged";
    const auto k_got = download(kc), k_want = download(kc_e), v_got = download(vc), v_want = download(vc_e);
    EXPECT_EQ(std::memcmp(k_got.data(), k_want.data(), k_got.size() * sizeof(float)), 0) << "k_cache";
    EXPECT_EQ(std::memcmp(v_got.data(), v_want.data(), v_got.size() * sizeof(float)), 0) << "v_cache";
  }
}

}  // namespace
}  // namespace seam::test
