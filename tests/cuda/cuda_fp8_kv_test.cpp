// The FP8 E4M3 KV cache on CUDA (--kv-cache-dtype fp8_e4m3) against the CPU backend's FP8
// cache, which defines the numerics (store: e4m3(x / scale), read: code * scale; KvScales).
//
// * store_kv and rope_store_kv write the CPU's codes bit for bit (same inputs: values of the
//   activation dtype), scales 1 and not 1, with saturating, subnormal and tie values.
// * Every attention kernel reads the codes: flash decode (split-KV, graphs), both prefill
//   kernels (mma.sync; wgmma at d = 128), the generic kernel (f32, d = 8) and the mixed step's
//   split, with windows and soft-capping, head dims 64/96/128/256. The CPU reads the same codes,
//   and E4M3 values are exact in bf16/f16, so the bound is the float-cache tests' own
//   (cuda_attention_fixture.h): f32 1e-5, f16 1e-2 / 5e-3, bf16 2e-2 / 1e-2 (rtol / atol of
//   max|ref|) for the rounding of q, P and the output to the activation dtype.
// * Windowed batches store NaN (a NaN code) in the keys below every row's window: a kernel
//   that reads them fails.
// * Run time (the CPU reference's, which is proportional to heads x d x keys read): the shapes
//   have the fewest heads with each GQA group; the runs of one batch (max_seq_len known and
//   unknown, the two prefill kernels) share its data and reference; the k/v scales, and in the
//   window test and the prefill kernels the dtypes, go round over the (dtype, shape) or
//   (shape, option) pairs, so each value still meets every other axis.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>

#include "attention_batch.h"
#include "backend/cuda/attention_params.h"
#include "backend/cuda/attention_prefill.h"
#include "backend/cuda/attention_prefill_wgmma.h"
#include "backend/cuda/e4m3_decode_table.h"
#include "core/fp8.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

// One way of running the attention over a batch: max_seq_len known (eager) or not (as in a
// graph), through Backend::attention or one prefill kernel by name, eagerly or replayed
// from a captured graph.
struct AttentionRun {
  bool known_max = true;
  std::optional<cuda::PrefillKernel> kernel = std::nullopt;
  bool graph = false;
  std::string name() const {
    return std::string(known_max ? "max_seq_len known" : "max_seq_len unknown") +
           (kernel ? (*kernel == cuda::PrefillKernel::wgmma ? ", wgmma" : ", mma.sync") : "") +
           (graph ? ", graph" : "");
  }
};

bool is_nan_code(uint8_t c) { return (c & 0x7f) == 0x7f; }

class CudaFp8Kv : public CudaTest {
 protected:
  // A device FP8 tensor (its bytes poisoned with -7777's, among them the NaN code 0xff).
  Tensor fp8_tensor(int64_t n_slots, int64_t kv_heads, int64_t d) {
    Tensor raw = empty(DType::i32, {(n_slots * kv_heads * d + 3) / 4});
    return Tensor(raw.data, DType::fp8_e4m3, Device::cuda, {n_slots, kv_heads, d});
  }
  std::vector<uint8_t> download_codes(const Tensor& t) {
    std::vector<uint8_t> out(size_t(t.numel()));
    gpu->copy_d2h(out.data(), t.data, out.size());
    gpu->synchronize();
    return out;
  }
  // Device codes equal the CPU's: bit for bit where the input is a number, NaN codes for NaN.
  void expect_codes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::vector<float>& in,
                    const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    size_t n_bad = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const bool ok = std::isnan(in[i]) ? is_nan_code(got[i]) && is_nan_code(want[i]) : got[i] == want[i];
      if (!ok && n_bad++ == 0) first = i;
    }
    EXPECT_EQ(n_bad, 0u) << what << ": " << n_bad << " codes differ; first at " << first << " (input " << in[first]
                         << ", got 0x" << std::hex << int(got[first]) << ", want 0x" << int(want[first]) << ")";
  }

  struct Caches {
    Tensor kc, vc;                          // device FP8 caches
    std::vector<uint8_t> k_codes, v_codes;  // the CPU backend's caches
  };
  // Stores k_h / v_h ([n_slots, kv, d], values of dtype t) into FP8 caches on both backends,
  // row i at a shuffled slot, and checks the device codes against the CPU's.
  Caches store(DType t, std::vector<float>& k_h, std::vector<float>& v_h, int64_t n_slots, int64_t kv, int64_t d,
               KvScales s) {
    std::vector<int32_t> slots(static_cast<size_t>(n_slots));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    Caches c;
    c.kc = fp8_tensor(n_slots, kv, d);
    c.vc = fp8_tensor(n_slots, kv, d);
    gpu->store_kv(c.kc, c.vc, upload(k_h, t, {n_slots, kv, d}), upload(v_h, t, {n_slots, kv, d}),
                  upload_index(slots, {n_slots}), s);
    c.k_codes.assign(k_h.size(), 0);
    c.v_codes.assign(v_h.size(), 0);
    cpu.store_kv(Tensor(c.k_codes.data(), DType::fp8_e4m3, Device::cpu, {n_slots, kv, d}),
                 Tensor(c.v_codes.data(), DType::fp8_e4m3, Device::cpu, {n_slots, kv, d}),
                 host_view(k_h, {n_slots, kv, d}), host_view(v_h, {n_slots, kv, d}), host_index(slots, {n_slots}), s);
    // The inputs in slot order, as the codes sit.
    std::vector<float> k_at(k_h.size()), v_at(v_h.size());
    const size_t w = size_t(kv * d);
    for (size_t i = 0; i < slots.size(); ++i) {
      std::copy_n(k_h.begin() + int64_t(i * w), w, k_at.begin() + int64_t(size_t(slots[i]) * w));
      std::copy_n(v_h.begin() + int64_t(i * w), w, v_at.begin() + int64_t(size_t(slots[i]) * w));
    }
    expect_codes(download_codes(c.kc), c.k_codes, k_at, "store_kv k");
    expect_codes(download_codes(c.vc), c.v_codes, v_at, "store_kv v");
    return c;
  }

  // As cuda_attention_fixture.h's check, with FP8 caches on both sides (scales kv_scales): each
  // of `runs` over the same batch, caches and CPU reference (the reference is what costs).
  void check(DType t, Shape sh, const std::vector<Seq>& seqs, int n_prefill_seqs, const std::string& what,
             AttentionOptions opt, const std::vector<AttentionRun>& runs) {
    SCOPED_TRACE(what + " " + short_name(t) + " heads " + std::to_string(sh.heads) + "/" + std::to_string(sh.kv_heads) +
                 " d " + std::to_string(sh.d) + " window " + std::to_string(opt.sliding_window) + " softcap " +
                 std::to_string(opt.logit_softcap) + " k_scale " + std::to_string(opt.kv_scales.k) + " v_scale " +
                 std::to_string(opt.kv_scales.v));
    PagedBatch pb = paged_batch(seqs, n_prefill_seqs, rng);  // host_index views its vectors
    const int n_seqs = pb.n_seqs, n_tokens = pb.n_tokens, max_len = pb.max_len, n_prefill_tokens = pb.n_prefill_tokens;
    const int64_t max_reqs = pb.max_reqs, max_ctx = pb.max_ctx, n_slots = pb.n_slots;
    std::vector<int32_t>&indptr = pb.indptr, &seq_lens = pb.seq_lens, &req_rows = pb.req_rows,
                         &page_table = pb.page_table;
    const int64_t kv_width = sh.kv_heads * sh.d;
    // K/V of magnitude ~ the scales (x / scale ~ N(0, 1)): codes across E4M3's range.
    auto k_h = round_to(random_normal(size_t(n_slots * kv_width), rng, 2.f * opt.kv_scales.k), t);
    auto v_h = round_to(random_normal(size_t(n_slots * kv_width), rng, 2.f * opt.kv_scales.v), t);
    Caches c = store(t, k_h, v_h, n_slots, sh.kv_heads, sh.d, opt.kv_scales);
    if (opt.sliding_window > 0) {
      // Keys wholly below every row's window (rounded down to 128 keys, the largest key tile)
      // become NaN codes on both sides: a kernel that reads them fails.
      std::vector<uint8_t> kd = download_codes(c.kc), vd = download_codes(c.vc);
      for (int s = 0; s < n_seqs; ++s) {
        const int first_q = seq_lens[size_t(s)] - seqs[size_t(s)].n_new;
        const int unread = std::max(0, first_q - opt.sliding_window + 1) / 128 * 128;
        for (int p = 0; p < unread; ++p) {
          const int32_t slot = page_table[size_t(req_rows[size_t(s)] * max_ctx + p)];
          for (auto* codes : {&c.k_codes, &c.v_codes, &kd, &vd})
            std::fill_n(codes->begin() + slot * kv_width, kv_width, uint8_t(0x7f));
        }
      }
      gpu->copy_h2d(c.kc.data, kd.data(), kd.size());
      gpu->copy_h2d(c.vc.data, vd.data(), vd.size());
      gpu->synchronize();
    }

    const int64_t width = sh.heads * sh.d;
    auto q_h = round_to(random_normal(size_t(n_tokens * width), rng, 1.5f), t);
    opt.scale = 1.f / std::sqrt(float(sh.d));
    Tensor q = upload(q_h, t, {n_tokens, sh.heads, sh.d});
    Tensor out = empty(t, {n_tokens, sh.heads, sh.d});
    AttentionBatch b;
    b.n_tokens = n_tokens;
    b.n_seqs = n_seqs;
    b.n_prefill_seqs = n_prefill_seqs;
    b.n_prefill_tokens = n_prefill_tokens;
    b.qo_indptr = upload_index(indptr, {n_seqs + 1});
    b.seq_lens = upload_index(seq_lens, {n_seqs});
    b.req_rows = upload_index(req_rows, {n_seqs});
    b.page_table = upload_index(page_table, {max_reqs, max_ctx});
    std::vector<std::vector<float>> got;
    for (const AttentionRun& r : runs) {
      poison(out);
      b.max_seq_len = r.known_max ? max_len : 0;
      if (r.kernel) {
        const cuda::AttentionParams p = cuda::make_attention_params(out, q, c.kc, c.vc, b, opt);
        ASSERT_TRUE(p.kv_fp8);
        cuda::launch_flash_prefill(p, q.dtype, static_cast<cudaStream_t>(cuda_backend_stream(*gpu)), *r.kernel);
      } else {
        gpu->attention(out, q, c.kc, c.vc, b, opt);
      }
      if (r.graph) {
        gpu->synchronize();
        gpu->begin_capture();
        gpu->attention(out, q, c.kc, c.vc, b, opt);
        std::unique_ptr<Graph> g = gpu->end_capture();
        poison(out);
        gpu->replay(*g);
      }
      gpu->synchronize();
      got.push_back(download(out));
    }

    AttentionBatch hb = b;
    hb.max_seq_len = max_len;
    hb.qo_indptr = host_index(indptr, {n_seqs + 1});
    hb.seq_lens = host_index(seq_lens, {n_seqs});
    hb.req_rows = host_index(req_rows, {n_seqs});
    hb.page_table = host_index(page_table, {max_reqs, max_ctx});
    std::vector<float> ref(static_cast<size_t>(n_tokens * width));
    cpu.attention(host_view(ref, {n_tokens, sh.heads, sh.d}), host_view(q_h, {n_tokens, sh.heads, sh.d}),
                  Tensor(c.k_codes.data(), DType::fp8_e4m3, Device::cpu, {n_slots, sh.kv_heads, sh.d}),
                  Tensor(c.v_codes.data(), DType::fp8_e4m3, Device::cpu, {n_slots, sh.kv_heads, sh.d}), hb, opt);
    const std::vector<float> want = round_to(ref, t);
    for (size_t i = 0; i < runs.size(); ++i)
      expect_close(got[i], want, tolerance_for(t, {1e-5, 1e-5}, {1e-2, 5e-3}, {2e-2, 1e-2}),
                   "fp8 kv attention (" + runs[i].name() + ")");
  }
};

// The tensor-core head dims (and the generic kernel's d 8 at f32), GQA groups 1 to 7. The head
// counts are the smallest with each group size (and at least two KV heads where the grid has
// them): the CPU reference's time is proportional to heads x d, and the kernels' paths depend
// on the dtype, d and the group, not on how many KV heads there are.
const Shape kShapes[] = {{8, 2, 128}, {4, 4, 96}, {4, 2, 256}, {14, 2, 64}, {8, 4, 8}};
const DType kDtypes[] = {DType::bf16, DType::f16, DType::f32};
const KvScales kScales[] = {{1.f, 1.f}, {0.37f, 2.5f}};
// Decode batches run with max_seq_len known and unknown (as in a graph) over the same data.
const std::vector<AttentionRun> kKnownAndUnknownMax = {{true}, {false}};

// The scales of shape i under dtype j: both scales for every dtype and every shape, over the
// grid of (dtype, shape) pairs rather than at each.
KvScales cycled_scales(size_t shape_i, size_t dtype_i) { return kScales[(shape_i + dtype_i) % 2]; }

AttentionOptions with(KvScales s, int window = 0, float cap = 0.f) {
  AttentionOptions o;
  o.kv_scales = s;
  o.sliding_window = window;
  o.logit_softcap = cap;
  return o;
}

// The decode by bit arithmetic (kv_fp8.cuh's e4m3x4_to_pairs, the register-fragment decode
// kernel's) against the conversion unit's and the CPU's value, every code, both dtypes: equal
// bits for every code but the two NaN codes, which it documents as +-480.
TEST_F(CudaFp8Kv, BitDecodeOfEveryCodeEqualsTheConversionUnits) {
  for (DType t : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(short_name(t));
    Tensor buf = empty(DType::i32, {256});  // 2 x 256 16-bit patterns
    uint16_t* cvt = static_cast<uint16_t*>(buf.data);
    cuda::launch_e4m3_decode_table(cvt, cvt + 256, t, stream());
    gpu->synchronize();
    std::vector<uint16_t> h(512);
    gpu->copy_d2h(h.data(), buf.data, h.size() * 2);
    const auto value = [&](uint16_t bits) { return t == DType::bf16 ? bf16_to_f32(bits) : f16_to_f32(bits); };
    int n_subnormal = 0;
    for (int c = 0; c < 256; ++c) {
      const uint16_t by_cvt = h[size_t(c)], by_bits = h[size_t(256 + c)];
      if (is_nan_code(uint8_t(c))) {
        EXPECT_TRUE(std::isnan(value(by_cvt))) << "code " << c;
        EXPECT_EQ(value(by_bits), (c & 0x80) ? -480.f : 480.f) << "code " << c;
        continue;
      }
      EXPECT_EQ(by_bits, by_cvt) << "code " << c;
      EXPECT_EQ(value(by_bits), fp8_e4m3_to_f32(uint8_t(c))) << "code " << c;
      n_subnormal += (c & 0x78) == 0 && (c & 7) != 0;
    }
    EXPECT_EQ(n_subnormal, 14);  // the codes the fma must not flush: 7 of each sign
  }
}

TEST_F(CudaFp8Kv, StoreKvCodesEqualTheCpus) {
  for (DType t : kDtypes)
    for (KvScales s : kScales) {
      SCOPED_TRACE(std::string(short_name(t)) + " k_scale " + std::to_string(s.k));
      const int64_t n_slots = 37, kv = 4, d = 64;
      auto k_h = random_normal(size_t(n_slots * kv * d), rng, 3.f * s.k);
      auto v_h = random_normal(size_t(n_slots * kv * d), rng, 0.02f * s.v);  // many subnormal codes
      // Saturation (|x / s| >= 448), ties of the E4M3 grid (1.0625 between 1 and 1.125 -> 1;
      // 1.1875 -> 1.25), the smallest subnormal's half (a tie to 0) and -0.
      const float special[] = {1000.f, -5000.f, 448.f, 464.f, 1.0625f, 1.1875f, -1.0625f, 0x1p-10f, -0.f, 0x1p-9f};
      for (size_t i = 0; i < std::size(special); ++i) {
        k_h[i] = special[i] * s.k;
        v_h[i] = special[i] * s.v;
      }
      k_h = round_to(k_h, t);
      v_h = round_to(v_h, t);
      store(t, k_h, v_h, n_slots, kv, d, s);
    }
}

TEST_F(CudaFp8Kv, RopeStoreKvWritesTheCodesOfTheRotatedKeys) {
  // The fused rope + store on an FP8 cache writes what rope, then store_kv, write (the same
  // device-rounded rotated keys, encoded): bit for bit.
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t d : {64, 128}) {
      const int64_t n = 9, heads = 8, kv = 2, n_slots = 20;
      const KvScales s{0.6f, 1.7f};
      auto qkv_h = round_to(random_normal(size_t(n * (heads + 2 * kv) * d), rng, 2.f), t);
      std::vector<float> inv_freq(size_t(d / 2));
      for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = std::pow(10000.f, -2.f * float(i) / float(d));
      std::vector<int32_t> positions(static_cast<size_t>(n)), slots(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) positions[size_t(i)] = 3 + 11 * i;
      std::iota(slots.begin(), slots.end(), 5);
      Tensor freq = upload(inv_freq, DType::f32, {d / 2}), pos = upload_index(positions, {n});
      Tensor sl = upload_index(slots, {n});
      auto views = [&](Tensor qkv) {
        return std::array<Tensor, 3>{qkv.slice_cols(0, heads * d).unflatten_last(heads, d),
                                     qkv.slice_cols(heads * d, kv * d).unflatten_last(kv, d),
                                     qkv.slice_cols((heads + kv) * d, kv * d).unflatten_last(kv, d)};
      };
      Tensor fused_qkv = upload(qkv_h, t, {n, (heads + 2 * kv) * d}), split_qkv = upload(qkv_h, t, {n, (heads + 2 * kv) * d});
      Tensor kc1 = fp8_tensor(n_slots, kv, d), vc1 = fp8_tensor(n_slots, kv, d);
      Tensor kc2 = fp8_tensor(n_slots, kv, d), vc2 = fp8_tensor(n_slots, kv, d);
      auto f = views(fused_qkv), g = views(split_qkv);
      gpu->rope_store_kv(f[0], f[1], f[2], pos, RopeTables(freq), kc1, vc1, sl, s);
      gpu->rope(g[0], g[1], pos, RopeTables(freq));
      gpu->store_kv(kc2, vc2, g[1], g[2], sl, s);
      gpu->synchronize();
      const auto k1 = download_codes(kc1), k2 = download_codes(kc2), v1 = download_codes(vc1), v2 = download_codes(vc2);
      for (int i = 0; i < n; ++i) {
        const size_t at = size_t(slots[size_t(i)] * kv * d), w = size_t(kv * d);
        EXPECT_TRUE(std::equal(k1.begin() + int64_t(at), k1.begin() + int64_t(at + w), k2.begin() + int64_t(at)))
            << short_name(t) << " d " << d << " row " << i;
        EXPECT_TRUE(std::equal(v1.begin() + int64_t(at), v1.begin() + int64_t(at + w), v2.begin() + int64_t(at)))
            << short_name(t) << " d " << d << " row " << i;
      }
    }
}

TEST_F(CudaFp8Kv, Decode) {
  const std::vector<Seq> seqs = {{1, 0}, {1, 16}, {1, 299}, {1, 999}, {1, 62}, {1, 4096}};
  for (size_t j = 0; j < std::size(kDtypes); ++j)
    for (size_t i = 0; i < std::size(kShapes); ++i)
      check(kDtypes[j], kShapes[i], seqs, 0, "decode", with(cycled_scales(i, j)), kKnownAndUnknownMax);
}

TEST_F(CudaFp8Kv, DecodeInAGraph) {
  const std::vector<Seq> seqs = {{1, 7}, {1, 3000}, {1, 130}};
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& sh : kShapes) check(t, sh, seqs, 0, "decode", with(kScales[1]), {{false, std::nullopt, true}});
}

TEST_F(CudaFp8Kv, Extend) {
  const std::vector<Seq> seqs = {{50, 0}, {129, 337}, {1, 5}, {70, 64}};
  for (size_t j = 0; j < std::size(kDtypes); ++j)
    for (size_t i = 0; i < std::size(kShapes); ++i)
      check(kDtypes[j], kShapes[i], seqs, int(seqs.size()), "extend", with(cycled_scales(i, j)), {{true}});
}

TEST_F(CudaFp8Kv, PrefillKernelsByName) {
  // d = 128 through each prefill kernel: long sequences (several key tiles, so both FP8
  // pipelines wrap their stages), cached prefixes not multiples of a tile, mid-tile ends.
  const std::vector<std::vector<Seq>> batches = {{{300, 77}}, {{45, 200}, {1, 0}, {2, 130}, {3, 5}, {129, 0}, {70, 333}},
                                                 {{300, 1000}}};
  // Both kernels run over the same data and reference; each batch and each option set under
  // both dtypes (alternating over the pairs).
  std::vector<AttentionRun> kernels = {{true, cuda::PrefillKernel::mma_sync}};
  if (cuda::flash_prefill_wgmma_supported(DType::bf16, 128)) kernels.push_back({true, cuda::PrefillKernel::wgmma});
  const AttentionOptions options[] = {with(kScales[1]), with(kScales[0], 200, 1.f), with(kScales[1], 37)};
  const DType dtypes[] = {DType::bf16, DType::f16};
  // GQA group 4 on the first two batches, group 1 on the long one (the CPU reference's cost).
  for (size_t i = 0; i < batches.size(); ++i)
    for (size_t o = 0; o < std::size(options); ++o)
      check(dtypes[(i + o) % 2], i < 2 ? Shape{8, 2, 128} : Shape{4, 4, 128}, batches[i], int(batches[i].size()),
            "prefill kernels batch " + std::to_string(i), options[o], kernels);
}

TEST_F(CudaFp8Kv, Mixed) {
  const std::vector<Seq> seqs = {{40, 310}, {7, 0}, {1, 4}, {1, 899}, {1, 32}};
  for (size_t j = 0; j < std::size(kDtypes); ++j)
    for (size_t i = 0; i < std::size(kShapes); ++i)
      check(kDtypes[j], kShapes[i], seqs, 2, "mixed", with(cycled_scales(i, j)), {{true}});
}

TEST_F(CudaFp8Kv, WindowAndSoftcap) {
  const std::vector<Seq> extend = {{50, 0}, {129, 337}, {1, 5}, {70, 64}};
  const std::vector<Seq> decode = {{1, 0}, {1, 299}, {1, 999}, {1, 4096}};
  const std::vector<Seq> mixed = {{40, 310}, {7, 0}, {1, 899}, {1, 32}};
  // cuda_attention_window_test.cpp's option sets, cut to four (the CPU reference's time): cap
  // alone, the one-key window, windows inside and across key tiles with and without the cap.
  const std::pair<int, float> options[] = {{0, 1.f}, {1, 0.f}, {37, 0.f}, {200, 1.f}};
  // Every option on every shape, the dtype going round the three over the (shape, option)
  // pairs: each dtype meets every option and every shape.
  for (size_t i = 0; i < std::size(kShapes); ++i)
    for (size_t k = 0; k < std::size(options); ++k) {
      const DType t = kDtypes[(i + k) % std::size(kDtypes)];
      const AttentionOptions o = with(kScales[1], options[k].first, options[k].second);
      check(t, kShapes[i], extend, int(extend.size()), "extend", o, {{true}});
      check(t, kShapes[i], decode, 0, "decode", o, {{false}});
      check(t, kShapes[i], mixed, 2, "mixed", o, {{true}});
    }
}

}  // namespace
}  // namespace seam::test
