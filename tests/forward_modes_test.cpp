// One MIXED forward equals the same requests run as separate EXTEND and DECODE
// forwards; EXTEND with a cached prefix equals a full prefill.
#include <gtest/gtest.h>

#include <cmath>

#include "runner_fixture.h"

namespace seam::test {
namespace {

GraphConfig eager_only() {
  GraphConfig g;
  g.disable_cuda_graph = true;
  return g;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float rel, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(std::isfinite(a[i])) << what << " index " << i;
    num += double(a[i] - b[i]) * (a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  EXPECT_LE(std::sqrt(num / den), rel) << what;
}

TEST(ForwardModes, MixedEqualsSeparateExtendAndDecode) {
  RunnerFixture f(eager_only());
  const int V = f.config.vocab_size;
  // Sequences 0,1 prefill (one with a cached prefix); 2,3,4 decode.
  std::vector<SeqSpec> prefill = {{0, 9}, {5, 6}};
  std::vector<SeqSpec> decode = {{12, 1}, {3, 1}, {30, 1}};
  std::vector<SeqSpec> all = prefill;
  all.insert(all.end(), decode.begin(), decode.end());
  f.fill_prefixes(all);

  std::vector<int32_t> ids_mixed, ids_extend, ids_decode;
  ForwardBatch mixed = f.batch(prefill, decode);
  ASSERT_EQ(mixed.mode, ForwardMode::mixed);
  f.runner->forward_eager(mixed, ids_mixed);
  std::vector<float> logits_mixed = f.runner->last_logits(5);

  ForwardBatch extend = f.batch(prefill, {});
  f.runner->forward_eager(extend, ids_extend);
  std::vector<float> logits_extend = f.runner->last_logits(2);
  ForwardBatch dec = f.batch({}, decode, 2);
  f.runner->forward_eager(dec, ids_decode);
  std::vector<float> logits_decode = f.runner->last_logits(3);

  std::vector<float> separate = logits_extend;
  separate.insert(separate.end(), logits_decode.begin(), logits_decode.end());
  expect_close(logits_mixed, separate, 1e-5f, "mixed vs separate");
  for (int s = 0; s < 5; ++s)
    for (int v = 0; v < V; ++v)
      ASSERT_NEAR(logits_mixed[size_t(s * V + v)], separate[size_t(s * V + v)],
                  1e-5f * std::max(1.f, std::fabs(separate[size_t(s * V + v)])));
  std::vector<int32_t> ids_sep = ids_extend;
  ids_sep.insert(ids_sep.end(), ids_decode.begin(), ids_decode.end());
  EXPECT_EQ(ids_mixed, ids_sep);
}

TEST(ForwardModes, ExtendWithCachedPrefixEqualsFullPrefill) {
  RunnerFixture f(eager_only());
  std::vector<int32_t> ids;
  f.runner->forward_eager(f.batch({{0, 20}}, {}), ids);
  auto full = f.runner->last_logits(1);
  // Same sequence: prefix 0..13 already in the cache (the run above wrote it), 6 new tokens.
  f.runner->forward_eager(f.batch({{14, 6}}, {}), ids);
  auto chunked = f.runner->last_logits(1);
  expect_close(chunked, full, 1e-5f, "chunked vs full");
}

}  // namespace
}  // namespace seam::test
