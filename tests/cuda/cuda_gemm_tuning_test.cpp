// Start-up GEMM tuning in CublasLtGemm: a tuned plan computes what the heuristic's
// plan computes (bf16 tolerance: another kernel sums in another order), small row
// counts and calls made while the stream is capturing are never timed, nothing is
// timed after end_tuning(), plans off the 128-row tile grid also time the tiles
// of the heuristic's algorithm (only when Tuning::tile_space is on), and the cache file
// hands the next start-up the same kernels untimed (a stale entry is re-tuned).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cuda/cublaslt_gemm.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaGemmTuning : public CudaTest {
 protected:
  struct Problem {
    Tensor x, w, out_ref, out;
  };
  Problem make(int64_t m, int64_t n_out, int64_t in) {
    Problem p;
    p.x = upload(random_normal(size_t(m * in), rng), DType::bf16, {m, in});
    p.w = upload(random_normal(size_t(n_out * in), rng, 1.f / std::sqrt(float(in))), DType::bf16, {n_out, in});
    p.out_ref = empty(DType::bf16, {m, n_out});
    p.out = empty(DType::bf16, {m, n_out});
    return p;
  }
};

TEST_F(CudaGemmTuning, TunedPlansMatchTheHeuristicsPlan) {
  cuda::CublasLtGemm plain, tuned;
  cuda::CublasLtGemm::Tuning t;
  t.min_rows = 256;
  t.n_candidates = 8;
  tuned.begin_tuning(t, stream());
  ASSERT_TRUE(tuned.tuning());
  struct Shape {
    int64_t m, n_out, in;
  };
  const Shape shapes[] = {{256, 3072, 2048}, {576, 2048, 2048}, {576, 4096, 1024}, {128, 1024, 1024}};
  int n_eligible = 0;
  for (const Shape& s : shapes) {
    SCOPED_TRACE("M " + std::to_string(s.m) + " N " + std::to_string(s.n_out) + " K " + std::to_string(s.in));
    Problem p = make(s.m, s.n_out, s.in);
    plain.run(p.out_ref, p.x, p.w, Tensor{}, stream());
    tuned.run(p.out, p.x, p.w, Tensor{}, stream());
    expect_close(download(p.out), download(p.out_ref), tolerance_for(DType::bf16), "tuned vs heuristic");
    n_eligible += s.m >= t.min_rows;
  }
  const auto st = tuned.end_tuning();
  EXPECT_FALSE(tuned.tuning());
  // Every eligible shape was timed (the heuristic offers several bf16 kernels at these
  // sizes); M=128 < min_rows was not.
  EXPECT_EQ(st.n_tuned + st.n_skipped, n_eligible);
  EXPECT_EQ(st.n_skipped, 0);
  EXPECT_GT(st.seconds, 0);
  EXPECT_LE(st.chosen_us, st.heuristic_us);  // the kept kernel is never slower than rank 0 as timed
  // The two 576-row shapes are off the 128-row tile grid: the tiles of the heuristic's algorithm
  // were timed with its candidates (on sm_90 it offers dozens for bf16); 256 rows are on the grid.
  EXPECT_GE(st.n_tile_searched, 1);
  EXPECT_LE(st.n_tile_searched, 2);
  EXPECT_LE(st.n_tile_kept, st.n_tile_searched);
}

TEST_F(CudaGemmTuning, TileSearchCanBeTurnedOffAndStaysCorrect) {
  for (bool tiles : {false, true}) {
    SCOPED_TRACE(tiles ? "tile search on" : "tile search off");
    cuda::CublasLtGemm plain, tuned;
    cuda::CublasLtGemm::Tuning t;
    t.tile_space = tiles;
    t.tile_candidates = 8;  // keep more, so a tile is more likely to be the one run below
    tuned.begin_tuning(t, stream());
    Problem p = make(448, 4096, 1024), q = make(1024, 1024, 1024);
    plain.run(p.out_ref, p.x, p.w, Tensor{}, stream());
    tuned.run(p.out, p.x, p.w, Tensor{}, stream());
    plain.run(q.out_ref, q.x, q.w, Tensor{}, stream());
    tuned.run(q.out, q.x, q.w, Tensor{}, stream());
    expect_close(download(p.out), download(p.out_ref), tolerance_for(DType::bf16), "448 rows");
    expect_close(download(q.out), download(q.out_ref), tolerance_for(DType::bf16), "1024 rows");
    const auto st = tuned.end_tuning();
    EXPECT_EQ(st.n_tuned, 2);
    EXPECT_EQ(st.n_tile_searched, tiles ? 1 : 0);  // only the 448-row plan is off the grid
  }
}

TEST_F(CudaGemmTuning, NeverTimesWhileCapturingOrAfterEnd) {
  cuda::CublasLtGemm plain, tuned;
  tuned.begin_tuning(cuda::CublasLtGemm::Tuning{}, stream());
  Problem p = make(512, 2048, 2048);
  plain.run(p.out_ref, p.x, p.w, Tensor{}, stream());
  // First use of the shape inside a capture: timing would synchronize the capturing
  // stream (an error that invalidates the capture), so the plan takes the heuristic's pick.
  gpu->begin_capture();
  tuned.run(p.out, p.x, p.w, Tensor{}, stream());
  auto graph = gpu->end_capture();
  gpu->replay(*graph);
  expect_close(download(p.out), download(p.out_ref), tolerance_for(DType::bf16), "captured");
  // The plan exists now: an eager call reuses it, untimed.
  tuned.run(p.out, p.x, p.w, Tensor{}, stream());
  auto st = tuned.end_tuning();
  EXPECT_EQ(st.n_tuned, 0);
  EXPECT_EQ(st.n_skipped, 0);
  // After end_tuning a new eligible shape is not timed either.
  Problem q = make(1024, 2048, 2048);
  tuned.run(q.out, q.x, q.w, Tensor{}, stream());
  gpu->synchronize();
  EXPECT_FALSE(tuned.tuning());
  EXPECT_EQ(tuned.end_tuning().n_tuned, 0);
}

TEST_F(CudaGemmTuning, BackendHookTunesUntilEndStartup) {
  Backend::GemmTuning t;
  t.min_rows = 256;
  gpu->begin_gemm_tuning(t);
  Problem p = make(384, 2048, 1024);
  cuda::CublasLtGemm plain;
  plain.run(p.out_ref, p.x, p.w, Tensor{}, stream());
  gpu->linear(p.out, p.x, p.w, Tensor{});
  gpu->end_startup();  // prints the start-up line, frees the scratch
  expect_close(download(p.out), download(p.out_ref), tolerance_for(DType::bf16), "backend linear");
}

TEST_F(CudaGemmTuning, InterleavedRoundsGiveEveryCandidateAMedian) {
  cuda::CublasLtGemm g;
  g.begin_tuning(cuda::CublasLtGemm::Tuning{}, stream());
  Problem p = make(512, 2048, 1024);
  cuda::GemmTimingMethod m;
  m.n_warmup = 1;
  m.n_reps = 5;
  const auto c = g.time_candidates(p.out, p.x, p.w, Tensor{}, 6, m);
  ASSERT_GE(c.size(), 2u);  // sm_90 offers several bf16 kernels here
  for (const auto& a : c) EXPECT_GT(a.median_us, 0);
  // The same kernel twice in one round: two medians, both timed.
  const auto twice = g.time_algos(p.out, p.x, p.w, Tensor{}, {c.back(), c.back()}, m);
  ASSERT_EQ(twice.size(), 2u);
  EXPECT_GT(twice[0].median_us, 0);
  EXPECT_GT(twice[1].median_us, 0);
  g.end_tuning();
}

TEST_F(CudaGemmTuning, CacheHandsTheNextStartTheSameKernelsUntimed) {
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / ("seam_gemm_cache_" + std::to_string(::getpid())) / "t.json";
  fs::remove_all(file.parent_path());
  cuda::CublasLtGemm::Tuning t;
  t.cache_path = file.string();
  Problem p = make(576, 2048, 1024), q = make(384, 1024, 1024);
  auto start = [&](const Tensor& p_out, const Tensor& q_out) {  // one start-up: both shapes, a new gemm
    cuda::CublasLtGemm g;
    g.begin_tuning(t, stream());
    g.run(p_out, p.x, p.w, Tensor{}, stream());
    g.run(q_out, q.x, q.w, Tensor{}, stream());
    return g.end_tuning();
  };
  {  // first start: both plans timed, results saved
    const auto st = start(p.out_ref, q.out_ref);
    EXPECT_EQ(st.n_tuned, 2);
    EXPECT_EQ(st.n_cached, 0);
    EXPECT_TRUE(st.cache_saved);
    ASSERT_TRUE(fs::exists(file));
  }
  {  // second start: nothing timed, and the kernels are the same ones (bit-identical outputs)
    const auto st = start(p.out, q.out);
    EXPECT_EQ(st.n_tuned, 0);
    EXPECT_EQ(st.n_cached, 2);
    EXPECT_EQ(st.n_cache_stale, 0);
    EXPECT_EQ(st.seconds, 0);
    EXPECT_EQ(download(p.out), download(p.out_ref));
    EXPECT_EQ(download(q.out), download(q.out_ref));
  }
  {  // an entry cuBLASLt rejects (bytes edited in the file) is re-tuned, and the run stays correct
    nlohmann::json j;
    std::ifstream(file) >> j;
    for (auto& [scope, entries] : j["scopes"].items())
      for (auto& [key, e] : entries.items()) e["algo"] = std::string(128, 'f');
    std::ofstream(file) << j.dump();
    cuda::CublasLtGemm g;
    g.begin_tuning(t, stream());
    g.run(p.out, p.x, p.w, Tensor{}, stream());
    const auto st = g.end_tuning();
    EXPECT_EQ(st.n_cached, 0);
    EXPECT_EQ(st.n_cache_stale, 1);
    EXPECT_EQ(st.n_tuned, 1);
    expect_close(download(p.out), download(p.out_ref), tolerance_for(DType::bf16), "re-tuned after a stale entry");
  }
  fs::remove_all(file.parent_path());
}

}  // namespace
}  // namespace seam::test
