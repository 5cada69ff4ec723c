// The grouped MoE path's grouping step (moe_align.cuh) in both its forms: the staged form (the
// sorted slots placed in shared memory, copied out in order) must give the same offsets and tile
// starts as the form that stores each slot to global memory, and the same slots in every
// expert's group (the order inside a group is the atomics' in both, and no GEMM row depends on
// it); and both must agree with a host count. At decode and prefill sizes, Qwen3-30B-A3B's 128
// experts top-8 and Mixtral's 8 top-2, M-tiles of 64 and 128 rows, experts left empty, and more
// slots than the staged form's shared memory holds (it must fall back, not fail).
#include <algorithm>
#include <numeric>

#include "backend/cuda/moe_experts_grouped.h"
#include "cuda_test_util.h"

namespace seam::test {
namespace {

class CudaMoeAlign : public CudaTest {};

struct AlignCase {
  int n_experts, k;
  int64_t n;
  int used;  // experts the routing draws from (the rest stay empty)
};

TEST_F(CudaMoeAlign, StagedFormGroupsAsTheGlobalForm) {
  // The staged form's edge on this device: the most slots of 128 experts its shared memory holds
  // (the opt-in maximum less 1 KB, 4 bytes a count, a cursor and a slot), then one more.
  int optin = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), cudaSuccess);
  const int64_t edge = (int64_t(optin) - 1024) / 4 - 2 * 128;
  EXPECT_TRUE(cuda::moe_align_staged_fits(edge, 128));
  EXPECT_FALSE(cuda::moe_align_staged_fits(edge + 1, 128));
  EXPECT_TRUE(cuda::moe_align_staged_fits(4096 * 8, 128)) << "a 4,096-token prefill at top-8 is staged";
  const AlignCase cases[] = {{128, 8, 1, 128},    {128, 8, 64, 128},       {128, 8, 4096, 128},
                             {128, 8, 1000, 37},  {8, 2, 4096, 8},         {8, 2, 3, 8},
                             {128, 1, edge, 128}, {128, 1, edge + 1, 128},  // the last staged size, the first not
                             {128, 8, 8192, 128}};                          // 65,536 slots: fallback
  for (const AlignCase& c : cases)
    for (int tile_rows : {64, 128}) {
      SCOPED_TRACE("experts " + std::to_string(c.n_experts) + " top-" + std::to_string(c.k) + " n " +
                   std::to_string(c.n) + " used " + std::to_string(c.used) + " tile " + std::to_string(tile_rows));
      const int E = c.n_experts;
      const int64_t n_slots = c.n * c.k;
      std::vector<int32_t> ids(static_cast<size_t>(n_slots));
      std::vector<int32_t> pool(static_cast<size_t>(c.used));
      std::iota(pool.begin(), pool.end(), 0);
      for (int64_t i = 0; i < c.n; ++i) {  // k distinct experts a row, as top-k gives
        std::shuffle(pool.begin(), pool.end(), rng);
        std::copy(pool.begin(), pool.begin() + c.k, ids.begin() + i * c.k);
      }
      Tensor ids_d = upload_index(ids, {c.n, int64_t(c.k)});
      const int64_t len = 2 * E + 2 + n_slots;
      Tensor a = empty(DType::i32, {len}), b = empty(DType::i32, {len});
      cuda::launch_moe_align_index(a, ids_d, E, tile_rows, false, stream());
      cuda::launch_moe_align_index(b, ids_d, E, tile_rows, true, stream());
      gpu->synchronize();
      const auto ia = download_i32(a), ib = download_i32(b);
      // The host's counts: offsets, tile starts.
      std::vector<int64_t> count(static_cast<size_t>(E), 0);
      for (int32_t e : ids) ++count[size_t(e)];
      int64_t o = 0, t = 0;
      for (int e = 0; e <= E; ++e) {
        ASSERT_EQ(ia[size_t(e)], o) << "offset of expert " << e;
        ASSERT_EQ(ia[size_t(E + 1 + e)], t) << "tile start of expert " << e;
        if (e < E) o += count[size_t(e)], t += (count[size_t(e)] + tile_rows - 1) / tile_rows;
      }
      // Offsets and tile starts: the same ints.
      EXPECT_TRUE(std::equal(ia.begin(), ia.begin() + 2 * E + 2, ib.begin()));
      // Each group: the expert's slots, the same set in both forms.
      for (int e = 0; e < E; ++e) {
        const size_t from = size_t(2 * E + 2 + ia[size_t(e)]), to = size_t(2 * E + 2 + ia[size_t(e + 1)]);
        std::vector<int32_t> ga(ia.begin() + from, ia.begin() + to), gb(ib.begin() + from, ib.begin() + to);
        for (int32_t s : ga) ASSERT_EQ(ids[size_t(s)], e) << "slot " << s << " in expert " << e << "'s group";
        std::sort(ga.begin(), ga.end());
        std::sort(gb.begin(), gb.end());
        ASSERT_EQ(ga, gb) << "expert " << e << "'s group";
        ASSERT_TRUE(std::adjacent_find(ga.begin(), ga.end()) == ga.end()) << "a slot twice in expert " << e;
      }
    }
}

}  // namespace
}  // namespace seam::test
