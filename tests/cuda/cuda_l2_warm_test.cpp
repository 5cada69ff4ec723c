// AttentionBatch::l2_warm: the decode kernel prefetches the next op's weights into L2
// while it runs. A hint must never change a result or the bytes it names: decode
// attention with and without it is bit-identical (eager and replayed from a graph, idle
// splits included), and a hint the kernel cannot take is rejected at the boundary.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaL2Warm : public CudaTest {
 protected:
  struct Batch {
    Tensor q, kc, vc;  // [n, heads, d], [n_slots, kv_heads, d] x 2
    AttentionBatch b;
  };
  // Decode rows of the given contexts (32/8 heads x d), KV slots scattered.
  Batch decode_batch(DType t, int64_t d, const std::vector<int>& contexts) {
    const int64_t heads = 32, kv_heads = 8;
    const int n = int(contexts.size());
    const int max_ctx = *std::max_element(contexts.begin(), contexts.end());
    const int64_t n_slots = int64_t(n) * max_ctx + 7;
    std::vector<int32_t> indptr(static_cast<size_t>(n) + 1), seq_lens(contexts.begin(), contexts.end());
    std::vector<int32_t> rows(static_cast<size_t>(n));
    std::iota(indptr.begin(), indptr.end(), 0);
    std::iota(rows.begin(), rows.end(), 0);
    std::vector<int32_t> perm(static_cast<size_t>(n_slots));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int32_t> pt(static_cast<size_t>(n) * static_cast<size_t>(max_ctx), 0);
    size_t next = 0;
    for (int s = 0; s < n; ++s)
      for (int p = 0; p < contexts[size_t(s)]; ++p) pt[size_t(s) * size_t(max_ctx) + size_t(p)] = perm[next++];
    Batch out;
    out.q = upload(random_normal(size_t(n * heads * d), rng, 1.5f), t, {n, heads, d});
    out.kc = upload(random_normal(size_t(n_slots * kv_heads * d), rng), t, {n_slots, kv_heads, d});
    out.vc = upload(random_normal(size_t(n_slots * kv_heads * d), rng), t, {n_slots, kv_heads, d});
    AttentionBatch& b = out.b;
    b.n_tokens = n;
    b.n_seqs = n;
    b.max_seq_len = 0;  // as in a decode graph: every split launched, idle ones exit early
    b.qo_indptr = upload_index(indptr, {n + 1});
    b.seq_lens = upload_index(seq_lens, {n});
    b.req_rows = upload_index(rows, {n});
    b.page_table = upload_index(pt, {n, max_ctx});
    return out;
  }
  std::vector<float> run(const Batch& x, const Tensor& hint) {
    Tensor out = empty(x.q.dtype, {x.q.size(0), x.q.size(1), x.q.size(2)});
    AttentionBatch b = x.b;
    b.l2_warm = hint;
    gpu->attention(out, x.q, x.kc, x.vc, b, 1.f / std::sqrt(float(x.q.size(2))));
    return download(out);
  }
};

void expect_bit_equal(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t n_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) n_diff += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  EXPECT_EQ(n_diff, 0u) << what << ": " << n_diff << " of " << a.size() << " outputs differ";
}

TEST_F(CudaL2Warm, DecodeOutputAndHintBytesUnchanged) {
  for (DType t : {DType::bf16, DType::f16})
    for (int64_t d : {64, 128}) {
      SCOPED_TRACE(std::string(short_name(t)) + " d " + std::to_string(d));
      Batch x = decode_batch(t, d, {1, 37, 200, 1500});
      // A weight-sized hint (4 Mi elements) and the smallest one the kernel takes (16 bytes).
      const std::vector<float> w_host = random_normal(size_t(4) << 20, rng);
      Tensor big = upload(w_host, t, {int64_t(4) << 10, 1024});
      Tensor tiny = upload(random_normal(8, rng), t, {8});
      const std::vector<float> plain = run(x, Tensor());
      for (float v : plain) ASSERT_TRUE(std::isfinite(v)) << "an output was not written";
      expect_bit_equal(run(x, big), plain, "4 Mi-element hint");
      expect_bit_equal(run(x, tiny), plain, "16-byte hint");
      expect_bit_equal(download(big), round_to(w_host, t), "the hinted bytes");
    }
}

TEST_F(CudaL2Warm, GraphReplayWithHintEqualsEager) {
  Batch x = decode_batch(DType::bf16, 128, {3, 300});
  Tensor hint = upload(random_normal(size_t(1) << 20, rng), DType::bf16, {1 << 20});
  const std::vector<float> eager = run(x, Tensor());
  Tensor out = empty(DType::bf16, {2, 32, 128});
  AttentionBatch b = x.b;
  b.l2_warm = hint;
  gpu->begin_capture();
  gpu->attention(out, x.q, x.kc, x.vc, b, 1.f / std::sqrt(128.f));
  std::unique_ptr<Graph> g = gpu->end_capture();
  for (int rep = 0; rep < 3; ++rep) {
    poison(out);
    gpu->replay(*g);
    expect_bit_equal(download(out), eager, "replay " + std::to_string(rep));
  }
}

TEST_F(CudaL2Warm, RejectsHintsTheKernelCannotTake) {
  Batch x = decode_batch(DType::bf16, 128, {40});
  Tensor out = empty(DType::bf16, {1, 32, 128});
  AttentionBatch b = x.b;
  b.l2_warm = upload(random_normal(3, rng), DType::bf16, {3});  // 6 bytes: not a multiple of 16
  EXPECT_THROW(gpu->attention(out, x.q, x.kc, x.vc, b, 0.1f), Error);
  std::vector<float> host(64, 1.f);
  b.l2_warm = host_view(host, {64});  // host memory
  EXPECT_THROW(gpu->attention(out, x.q, x.kc, x.vc, b, 0.1f), Error);
  gpu->synchronize();
}

}  // namespace
}  // namespace seam::test
