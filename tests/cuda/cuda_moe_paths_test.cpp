// The moe_experts paths at the shapes the model runs them: the tensor-core skinny paths and the
// streamed kernel's variants at decode batches, the batch-1 GEMV path at Mixtral-8x7B's and
// Qwen3-30B-A3B's expert shapes, every path captured and replayed for new routing, and the
// grouped kernels eager and replayed (moe_paths_fixture.h: the fixture and routing).
#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>

#include "backend/cuda/attention_prefill_wgmma.h"
#include "backend/cuda/moe_experts.h"
#include "backend/cuda/moe_experts_grouped.h"
#include "backend/cuda/moe_skinny_mma_stream.h"
#include "cuda_test_util.h"
#include "moe_paths_fixture.h"

namespace seam::test {
namespace {

// The two tensor-core skinny paths (skinny_mma, and skinny_mma_stream, the default) against the
// CPU definition where the decode step runs them, eagerly and twice (bit-identical):
//   * Qwen3-30B-A3B's expert shape at 64 rows (128 experts, top-8, hidden 2048, inter 768; the
//     direct grid, 4 slots an expert on average; experts 0 and 1 hold ~11 rows: two 8-slot
//     columns a pass), in bf16 and f16;
//   * a Mixtral-like top-2 of 8 (hidden 256, inter 352 = 11 chunks: a half last ring step) at
//     every row count, routed unevenly: every row's first expert is 3 (one expert holds all
//     rows: 200 rows are 13 passes of 16 slots), its second 5 or 6; experts 1, 2, 4 and 7 have
//     none; row 1 is a padded row whose garbage first id must read expert 0 (its only row).
TEST_F(CudaMoePaths, SkinnyTensorCorePathsAtDecodeShapes) {
  struct Case {
    PathCase shape;
    std::vector<int64_t> rows;
    bool uneven;
  };
  const Case cases[] = {{PathCase{128, 768, 2048, 8}, {64}, false},
                        {PathCase{8, 352, 256, 2}, {1, 2, 7, 16, 64, 200}, true}};
  uint64_t seed = 1;
  for (const Case& cs : cases) {
    const PathCase c = cs.shape;
    const int64_t E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
    for (DType t : {DType::bf16, DType::f16}) {
      auto gu_h = fast_uniform(size_t(E * 2 * I * H), seed++, 0.1f, t);
      auto dn_h = fast_uniform(size_t(E * H * I), seed++, 0.1f, t);
      Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I});
      for (int64_t n : cs.rows) {
        const SkinnyBatch bt = skinny_batch(t, n, c, cs.uneven, gu_h, dn_h);
        const std::vector<float>&out_h = bt.out_h, &ref = bt.ref;
        const Tensor x = bt.x, ids = bt.ids, w = bt.w;
        for (cuda::MoePath path : {cuda::MoePath::skinny_mma, cuda::MoePath::skinny_mma_stream}) {
          SCOPED_TRACE(std::string(cuda::moe_path_name(path)) + " " + short_name(t) + " n " + std::to_string(n) +
                       " experts " + std::to_string(E) + " inter " + std::to_string(I) + " hidden " +
                       std::to_string(H) + " k " + std::to_string(k));
          const MoeScratch s = scratch(t, n, c);
          ASSERT_TRUE(cuda::moe_path_applies(path, x, gu, dn, ids, s));
          Tensor out = upload(out_h, t, {n, H});
          cuda::launch_moe_experts_path(path, out, x, gu, dn, ids, w, s, stream());
          const auto got = download(out);
          expect_close(got, ref, tolerance_for(t, {1e-5, 1e-6}, {1e-2, 1e-2}, {3e-2, 3e-2}), "vs cpu");
          Tensor again = upload(out_h, t, {n, H});
          cuda::launch_moe_experts_path(path, again, x, gu, dn, ids, w, scratch(t, n, c), stream());
          EXPECT_EQ(download(again), got) << "not deterministic";
        }
      }
    }
  }
}

// Every tuning variant of skinny_mma_stream (SEAM_MOE_STREAM_VARIANT: ring depth, grouped issue,
// tiles a warp, interleaved experts, L2 hints, the combine folded into down, x / act staged in shared
// memory), launched directly, against the CPU definition and bit for bit against variant 0 (every
// variant sums the same products in the same order):
//   * Qwen3-30B-A3B's expert shape at 64 rows (the direct grid; the interleaved variant deals
//     its blocks round-robin over the experts; experts 0 and 1 hold ~11 rows: with 8 rows
//     staged, a pass's second n-tile reads x from global memory), bf16;
//   * the uneven Mixtral-like top-2 of 8 above (hidden 256, inter 352 = 11 chunks: the tile's
//     last ring step half; 6 steps a gate_up tile: runs that end inside an issue group of 4)
//     at 1, 7, 64 and 200 rows (compact grids below 32 slots; 200 rows: 13 passes of 16 slots
//     over one expert, each a ring restart and, staged, the rows replaced behind a barrier), bf16
//     and f16;
//   * hidden 2080 / inter 96 (65 and 3 chunks: 33 and 2 steps a tile; a down warp of 4 tiles
//     past the last of 130 tiles; staged rows of 260 and 12 vectors, strides that need no
//     swizzle, as inter 352's 44, where hidden 2048 and 256 and inter 768 are swizzled), 16 rows.
TEST_F(CudaMoePaths, SkinnyStreamVariantsMatchTheCpuReference) {
  struct Case {
    PathCase shape;
    std::vector<int64_t> rows;
    bool uneven;
    std::vector<DType> dtypes;
  };
  const Case cases[] = {{PathCase{128, 768, 2048, 8}, {64}, false, {DType::bf16}},
                        {PathCase{8, 352, 256, 2}, {1, 7, 64, 200}, true, {DType::bf16, DType::f16}},
                        {PathCase{8, 96, 2080, 2}, {16}, false, {DType::bf16}}};
  const int n_variants = cuda::moe_skinny_mma_stream_variants();
  ASSERT_GE(n_variants, 2);
  uint64_t seed = 101;
  for (const Case& cs : cases) {
    const PathCase c = cs.shape;
    const int64_t E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
    for (DType t : cs.dtypes) {
      auto gu_h = fast_uniform(size_t(E * 2 * I * H), seed++, 0.1f, t);
      auto dn_h = fast_uniform(size_t(E * H * I), seed++, 0.1f, t);
      Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I});
      for (int64_t n : cs.rows) {
        const SkinnyBatch bt = skinny_batch(t, n, c, cs.uneven, gu_h, dn_h);
        const std::vector<float>&out_h = bt.out_h, &ref = bt.ref;
        const Tensor x = bt.x, ids = bt.ids, w = bt.w;
        std::vector<float> first;
        for (int v = 0; v < n_variants; ++v) {
          SCOPED_TRACE(std::string("variant ") + std::to_string(v) + " " + cuda::moe_skinny_mma_stream_variant_name(v) +
                       " " + short_name(t) + " n " + std::to_string(n) + " experts " + std::to_string(E) + " inter " +
                       std::to_string(I) + " hidden " + std::to_string(H) + " k " + std::to_string(k));
          const MoeScratch s = scratch(t, n, c);  // poisoned: a slot or feature a variant skips shows
          ASSERT_TRUE(cuda::moe_skinny_mma_stream_applies(x, gu, dn, ids, s));
          Tensor out = upload(out_h, t, {n, H});
          cuda::launch_moe_experts_skinny_mma_stream(out, x, gu, dn, ids, w, s, stream(), v);
          const auto got = download(out);
          expect_close(got, ref, tolerance_for(t, {1e-5, 1e-6}, {1e-2, 1e-2}, {3e-2, 3e-2}), "vs cpu");
          if (v == 0)
            first = got;
          else
            EXPECT_EQ(got, first) << "differs from variant 0";
        }
      }
    }
  }
}

// Route + one path captured once, replayed for new logits at every row count: each replay equals
// the cpu reference for the routing it produced (downloaded), and (deterministic paths) the eager
// launch bit for bit. Few rows leave most of the 32 experts without a row.
TEST_F(CudaMoePaths, CapturedPathsReplayForNewRouting) {
  const DType t = DType::bf16;
  const PathCase c{32, 64, 128, 4};
  const int64_t E = c.n_experts, I = c.inter, H = c.hidden;
  auto gu_h = round_to(random_normal(size_t(E * 2 * I * H), rng, 0.1f), t);
  auto dn_h = round_to(random_normal(size_t(E * H * I), rng, 0.1f), t);
  Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I});
  for (cuda::MoePath path : {cuda::MoePath::gathered_stream, cuda::MoePath::gathered_gemv, cuda::MoePath::skinny,
                             cuda::MoePath::skinny_mma, cuda::MoePath::skinny_mma_stream, cuda::MoePath::grouped}) {
    for (int64_t n : kRowCounts) {
      SCOPED_TRACE(std::string(cuda::moe_path_name(path)) + " n " + std::to_string(n));
      auto x_h = round_to(random_normal(size_t(n * H), rng), t);
      Tensor x = upload(x_h, t, {n, H});
      // Step 1: every row prefers experts 0..3: each of them gets all n rows, the other 28 none.
      check_replays(
          t, n, c, x_h, x, gu_h, dn_h, 2, prefer_experts(1, E, 0, 4),
          [&](Tensor out, Tensor ids, Tensor w, const MoeScratch& s) {
            cuda::launch_moe_experts_path(path, out, x, gu, dn, ids, w, s, stream());
          },
          path != cuda::MoePath::grouped);
    }
  }
}

// Route + skinny_mma_stream in each tuning variant, captured once and replayed for new logits
// (as above): the variants keep state on the device between their kernels (the folded combine's
// counts, zeroed by gate_up each run), so a replay must equal the CPU for the routing it produced
// and the eager launch bit for bit, also when one step sends every row to experts 0..3.
TEST_F(CudaMoePaths, CapturedSkinnyStreamVariantsReplayForNewRouting) {
  const DType t = DType::bf16;
  const PathCase c{32, 64, 128, 4};
  const int64_t E = c.n_experts, I = c.inter, H = c.hidden;
  auto gu_h = round_to(random_normal(size_t(E * 2 * I * H), rng, 0.1f), t);
  auto dn_h = round_to(random_normal(size_t(E * H * I), rng, 0.1f), t);
  Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I});
  for (int v = 0; v < cuda::moe_skinny_mma_stream_variants(); ++v) {
    for (int64_t n : {int64_t(2), int64_t(16), int64_t(64), int64_t(200)}) {
      SCOPED_TRACE(std::string("variant ") + std::to_string(v) + " " + cuda::moe_skinny_mma_stream_variant_name(v) +
                   " n " + std::to_string(n));
      auto x_h = round_to(random_normal(size_t(n * H), rng), t);
      Tensor x = upload(x_h, t, {n, H});
      check_replays(
          t, n, c, x_h, x, gu_h, dn_h, 2, prefer_experts(1, E, 0, 4),
          [&](Tensor out, Tensor ids, Tensor w, const MoeScratch& s) {
            cuda::launch_moe_experts_skinny_mma_stream(out, x, gu, dn, ids, w, s, stream(), v);
          },
          true);
    }
  }
}

// The batch-1 GEMV path (gathered_gemv) on the shapes it serves, at k = 1, 2, 8 where the stored
// experts allow: Mixtral-8x7B's (hidden 4096, inter 14336; 3 experts stored, so k <= 2, the last
// 470 MB into the gate/up weights; down pairs rows), a Mixtral-like one whose down pairs rows from
// k = 2 on (hidden = inter = 2048: 8 MiB a down matrix, the pair rule's 16 MiB over all slots)
// and Qwen3-30B-A3B's (hidden 2048, inter 768: one down row a warp; 16 experts stored). Eager on
// random routing against the CPU definition, twice bit for bit; then route + path captured once
// and replayed for new logits (the ids read on the device; the last replay sends the row to the
// highest experts), equal to the CPU for the routing each replay produced and to the eager launch.
TEST_F(CudaMoePaths, GatheredGemvMatchesAtModelShapes) {
  const DType t = DType::bf16;
  struct ShapeCase {
    const char* name;
    PathCase c;
    std::vector<int64_t> ks;
  };
  for (const ShapeCase& sc : {ShapeCase{"mixtral", PathCase{3, 14336, 4096, 2}, {1, 2}},
                              ShapeCase{"mixtral-like", PathCase{8, 2048, 2048, 8}, {1, 2, 8}},
                              ShapeCase{"qwen3", PathCase{16, 768, 2048, 8}, {1, 2, 8}}}) {
    const int64_t E = sc.c.n_experts, I = sc.c.inter, H = sc.c.hidden, n = 1;
    auto gu_h = round_to(fast_uniform(size_t(E * 2 * I * H), 1 + E, 0.17f), t);
    auto dn_h = round_to(fast_uniform(size_t(E * H * I), 2 + E, 0.17f), t);
    Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I});
    auto x_h = round_to(random_normal(size_t(n * H), rng), t);
    Tensor x = upload(x_h, t, {n, H});
    for (int64_t k : sc.ks) {
      SCOPED_TRACE(std::string(sc.name) + " k " + std::to_string(k));
      const PathCase c{E, I, H, k};
      std::vector<int32_t> ids_h;
      std::vector<float> w_h;
      random_routing(rng, n, E, k, ids_h, w_h);
      Tensor ids = upload_index(ids_h, {n, k}), w = upload(w_h, DType::f32, {n, k});
      const MoeScratch s = scratch(t, n, c);
      ASSERT_TRUE(cuda::moe_path_applies(cuda::MoePath::gathered_gemv, x, gu, dn, ids, s));
      auto out_h = round_to(random_normal(size_t(n * H), rng), t);
      Tensor out = upload(out_h, t, {n, H}), again = upload(out_h, t, {n, H});
      cuda::launch_moe_experts_path(cuda::MoePath::gathered_gemv, out, x, gu, dn, ids, w, s, stream());
      cuda::launch_moe_experts_path(cuda::MoePath::gathered_gemv, again, x, gu, dn, ids, w, scratch(t, n, c), stream());
      const auto got = download(out);
      expect_close(got, cpu_experts(out_h, x_h, gu_h, dn_h, ids_h, w_h, n, c), {3e-2, 3e-2}, "eager vs cpu");
      EXPECT_EQ(download(again), got) << "not deterministic";

      // Step 2 sends the row to the highest experts (the last bytes of the weights).
      check_replays(
          t, n, c, x_h, x, gu_h, dn_h, 3, prefer_experts(2, E, E - k, k),
          [&](Tensor out, Tensor rids, Tensor rw, const MoeScratch& rs) {
            cuda::launch_moe_experts_path(cuda::MoePath::gathered_gemv, out, x, gu, dn, rids, rw, rs, stream());
          },
          true,
          [&](int step, const std::vector<int32_t>& rids_h) {
            if (step == 2)
              for (int64_t j = 0; j < k; ++j) EXPECT_GE(rids_h[size_t(j)], E - k) << "forced routing not taken";
          });
    }
  }
}

// Every grouped GEMM family (moe_experts_grouped.h; the wgmma ones where an sm_90a build runs on
// a CC 9.0 GPU) launched directly, eagerly and captured: on the paths test's shapes (hidden 72
// and inter 200: partial k-steps and partial column tiles; top-4 of 32 with two hot experts),
// the eager result equals the CPU definition, and the captured launch, replayed for new routing
// (the second replay sends every row to experts 0..k-1: k full groups, the rest empty), equals
// it for the routing it produced.
TEST_F(CudaMoePaths, GroupedKernelsMatchTheCpuReferenceEagerAndReplayed) {
  const DType t = DType::bf16;
  for (PathCase c : {PathCase{32, 64, 128, 4}, PathCase{8, 200, 72, 2}}) {
    const int64_t E = c.n_experts, I = c.inter, H = c.hidden, k = c.k;
    auto gu_h = round_to(random_normal(size_t(E * 2 * I * H), rng, 0.1f), t);
    auto dn_h = round_to(random_normal(size_t(E * H * I), rng, 0.1f), t);
    Tensor gu = upload(gu_h, t, {E, 2 * I, H}), dn = upload(dn_h, t, {E, H, I});
    for (int64_t n : {int64_t(7), int64_t(200), int64_t(1100)}) {
      auto x_h = round_to(random_normal(size_t(n * H), rng), t);
      Tensor x = upload(x_h, t, {n, H});
      std::vector<cuda::GroupedKernel> kernels = {cuda::GroupedKernel::wmma};
      const bool wgmma = cuda::grouped_kernel_applies(cuda::GroupedKernel::wgmma, x, gu, dn, scratch(t, n, c));
      EXPECT_EQ(wgmma, cuda::flash_prefill_wgmma_supported(t, 128)) << "wgmma grouped kernels not reached";
      if (wgmma)
        kernels.insert(kernels.end(), {cuda::GroupedKernel::wgmma, cuda::GroupedKernel::wgmma_n128,
                                       cuda::GroupedKernel::wgmma_persistent});
      for (cuda::GroupedKernel kernel : kernels) {
        SCOPED_TRACE(std::string("grouped ") + cuda::grouped_kernel_name(kernel) + " n " + std::to_string(n) +
                     " experts " + std::to_string(E) + " inter " + std::to_string(I) + " hidden " + std::to_string(H));
        // Eager, on skewed routing with a padded row's garbage id.
        std::vector<int32_t> ids_h;
        std::vector<float> w_h;
        random_routing(rng, n, E, k, ids_h, w_h);
        auto out_h = round_to(random_normal(size_t(n * H), rng), t);
        {
          Tensor ids = upload_index(ids_h, {n, k}), w = upload(w_h, DType::f32, {n, k}), out = upload(out_h, t, {n, H});
          const MoeScratch eager_scratch = scratch(t, n, c);  // poisoned: a slot a kernel forgets shows
          cuda::launch_moe_experts_grouped_with(kernel, out, x, gu, dn, ids, w, eager_scratch, stream());
          expect_close(download(out), cpu_experts(out_h, x_h, gu_h, dn_h, ids_h, w_h, n, c), {3e-2, 3e-2},
                       "eager vs cpu");
        }
        // Route + experts captured once, replayed for new logits.
        check_replays(
            t, n, c, x_h, x, gu_h, dn_h, 2, prefer_experts(1, E, 0, k),
            [&](Tensor out, Tensor ids, Tensor w, const MoeScratch& s) {
              cuda::launch_moe_experts_grouped_with(kernel, out, x, gu, dn, ids, w, s, stream());
            },
            false);
      }
    }
  }
}

}  // namespace
}  // namespace seam::test
