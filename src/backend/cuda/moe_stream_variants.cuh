// moe_skinny_mma_stream's tuning variants (SEAM_MOE_STREAM_VARIANT, moe_skinny_mma_stream.h):
// each a whole set of compile-time knobs, so one bench run compares them. Included by
// moe_skinny_mma_stream_kernel.cuh (the kernel's geometry and what a knob does to it live there)
// and moe_skinny_mma_stream.cu (its launchers) alone.
#pragma once
#include <cstddef>

namespace seam::cuda::moe_stream {

// Variant 0 is the kernel as first measured.
//   stages:     ring steps a warp (2 KB each); stages - 1 in flight right after an issue.
//   group:      steps issued back to back when `group` stages are free (1: one a step). A row's
//               bytes of `group` consecutive steps (group x 128 B) reach the memory controllers
//               together instead of a step's latency apart: longer runs within a DRAM page.
//               Between issues the warp has stages - 1 down to stages - group steps in flight.
//   gu_tiles, dn_tiles: tiles a warp streams back to back in one ring (gate_up 8 features of
//               gate + up, down 16 features): fewer, longer blocks; fewer ring fills and drains.
//   interleave: direct grid only: consecutive blocks walk different experts (block b serves
//               expert b % E) instead of all of an expert's blocks adjacent.
//   hint:       bit 0: the weight copies carry an L2 evict_first policy (read once; x / act stay);
//               bit 1: L2::256B prefetch size (L2 fetches the 256-byte block a 128-byte line
//               sits in: the next step's line of the same row comes with it).
//   fuse:       moe_combine folded into down: the last block to finish a token adds its k outputs
//               (j in order, float32, rounded once: moe_combine's arithmetic, the same bits).
//   x_rows:     0, 8 or 16: the first x_rows slots of each 16-slot pass have their x (gate_up) or
//               act (down) rows, all of K, staged once by the block into shared memory (x_rows x K
//               x 2 B after the rings: 32 KB for gate_up at hidden 2048 and 8 rows, 12 KB for down
//               at inter 768), and the warps read them there; slots past x_rows (passes of 9..16
//               slots with x_rows 8, ~2% of experts at 4 slots an expert) from L1/L2 as before.
//   min_blocks: __launch_bounds__' blocks an SM, set to what shared memory allows (ring + x_rows
//               rows + 2 KB of slots + ~1.6 KB static and reserved a block, of 228 KB; x variants:
//               gate_up's count, the smaller): the register cap then never costs a block (5 -> at
//               most 96 registers a thread; the first version had 96 under a bound of 4 blocks,
//               where the reworked loop takes 100: 4 blocks an SM).
//   lines:      each copy instruction covers whole 128-byte lines (8 lanes a row's step, 4 rows an
//               instruction) instead of half lines (4 lanes a row, 8 rows): half the L2 requests
//               for the same bytes. A lane then reads back vectors other lanes copied, so the warp
//               meets a __syncwarp after each ring wait and before each batch of refills. The
//               same vectors land in the same ring slots: the mma inputs, and so the bits, are
//               variant 0's.
//
// Why x_rows (ncu on an H200, variant 0 at Qwen3-30B-A3B's 64 decode rows: gate_up 253 us and
// down 132 us, ~3.1 TB/s of weights where ~3.9 would meet the target). gate_up (grid 24 x 128,
// 128 threads, 88 registers, 43 KB shared, 5 blocks an SM): DRAM throughput 64 %, L2 throughput
// 91 % (Mem Busy 91 %: L2 is the limiter), L2 hit rate 46 %, L1 hit rate 12 %; warps stall 15.3
// of 20.6 cycles between issues on the L1TEX scoreboard (global loads). The weights are read once
// (the misses); the hits are mostly the activation rows: every warp __ldg'd its slots' x (or act)
// vectors for every step of every tile, so an expert's x rows (m slots x K x 2 B, ~16 KB for
// gate_up) came from L2 once per warp and tile, ~as many L2 bytes as the weights. Variants 1-16
// (ring depth, row runs, prefetch hints, tiles a warp, interleave, the fold) left that traffic
// as it was, which is why none of them helped. Staged, a block reads each row from L2 once (~6 %
// of its weight bytes at 4 slots an expert: 16 KB against 4 tiles x 64 KB), at the cost of
// blocks an SM (gate_up: 5 -> 3 at 8 rows, 2 at 16; 12 or 8 warps with 8 KB each in flight).
// A caution on the ratio: by the code's count a warp's x loads are ~1/4 of its weight bytes at 4
// slots an expert (4 rows x 2 x 16 B a lane group against a 2 KB step), so some of the 46 % may
// be weight sectors hit while the first request for their 128-byte line is in flight. The L1TEX
// stalls are the x loads either way (the weights come by cp.async): staged, those stalls go.
struct StreamCfg {
  int stages, group, gu_tiles, dn_tiles;
  bool interleave;
  int hint;
  const char* name;
  int min_blocks;
  bool fuse = false;
  int x_rows = 0;
  bool lines = false;
};
constexpr int kHintEvictFirst = 1, kHintPrefetch256 = 2;
constexpr StreamCfg kCfgs[] = {
    {5, 1, 1, 2, false, 0, "s5", 5},              // 0: as first measured (the default)
    {4, 1, 1, 2, false, 0, "s4", 6},              // 1: 6 KB in flight a warp, 6 blocks an SM
    {8, 1, 1, 2, false, 0, "s8", 3},              // 2: 14 KB a warp, 3 blocks an SM
    {6, 2, 1, 2, false, 0, "s6g2", 4},            // 3: 256-byte row runs, 4 blocks an SM
    {8, 4, 1, 2, false, 0, "s8g4", 3},            // 4: 512-byte row runs, 3 blocks an SM
    {5, 1, 1, 2, false, kHintPrefetch256, "s5p256", 5},  // 5: 256-byte runs by the L2 prefetch size
    {5, 1, 1, 2, false, kHintEvictFirst, "s5ef", 5},     // 6
    {6, 2, 1, 2, false, kHintPrefetch256 | kHintEvictFirst, "s6g2p256ef", 4},  // 7
    {5, 1, 1, 4, false, 0, "s5dn4", 5},           // 8: down 4 tiles a warp (64 rows), 8 blocks an expert
    {6, 2, 1, 4, false, 0, "s6g2dn4", 4},         // 9
    {5, 1, 2, 2, false, 0, "s5gu2", 5},           // 10: gate_up 2 tiles a warp, 12 blocks an expert
    {5, 1, 1, 2, true, 0, "s5il", 5},             // 11: experts interleaved over the grid
    {8, 4, 1, 4, false, kHintPrefetch256, "s8g4dn4p256", 3},  // 12
    {12, 8, 1, 2, false, 0, "s12g8", 2},          // 13: 1 KB row runs, 2 blocks an SM (11..4 steps in flight)
    {5, 1, 1, 2, false, 0, "s5fc", 5, true},      // 14: variant 0 with the combine folded into down
    {8, 4, 1, 2, false, 0, "s8g4fc", 3, true},    // 15: 4 with the combine folded
    {12, 8, 1, 2, false, 0, "s12g8fc", 2, true},  // 16: 13 with the combine folded
    // Staged x (x_rows), shared memory a block at hidden 2048 / inter 768 and 512 slots:
    // gate_up 40 + 32 + 3.6 = 75.6 KB (3 blocks), down 40 + 12 + 3.6 = 55.6 KB (4: under the
    // bound of 3 ptxas gives down 113 registers, <= 128, so registers leave it 4 blocks).
    {5, 1, 1, 2, false, 0, "s5x8", 3, false, 8},  // 17: variant 0 with 8 rows staged
    // gate_up 40 + 64 + 3.6 = 107.6 KB (2 blocks), down 40 + 24 + 3.6 = 67.6 KB (3).
    {5, 1, 1, 2, false, 0, "s5x16", 2, false, 16},  // 18: every slot of a pass staged
    // 17 with twice the tiles sharing a block's staged rows (12 gate_up, 8 down blocks an expert).
    {5, 1, 2, 4, false, 0, "s5x8gu2dn4", 3, false, 8},  // 19
    {5, 1, 1, 2, false, 0, "s5x8fc", 3, true, 8},       // 20: 17 with the combine folded
    // 17's shared memory spent on the ring instead of a third block: gate_up 72 + 32 + 3.6 = 107.6 KB
    // (2 blocks, 8 warps with 16 KB each in flight: 128 KB an SM against 17's 96), down 87.6 KB (2).
    {9, 1, 1, 2, false, 0, "s9x8", 2, false, 8},  // 21
    // Whole-line copies (lines). Why: ncu of variant 0 showed L2 the busy unit (91 %) at a 46 %
    // hit rate although the weights are read once; a half-line request pair per row and step
    // reads as one miss and one hit (the second half arriving while the first is in flight), so
    // the L2 sees twice the requests the bytes need. Staging x (17-21) did not help, which points
    // at the weight requests themselves.
    {5, 1, 1, 2, false, 0, "s5line", 5, false, 0, true},    // 22: variant 0, whole lines
    {6, 2, 1, 2, false, 0, "s6g2line", 4, false, 0, true},  // 23: 3, whole lines
    {8, 1, 1, 2, false, 0, "s8line", 3, false, 0, true},    // 24: 2, whole lines
};
constexpr int kNumCfgs = int(sizeof(kCfgs) / sizeof(kCfgs[0]));

// Variant v's staged rows at K = n_in (2-byte elements): 16-byte vectors and bytes a block. Host
// side only: kCfgs is host data, which device code may read in constant expressions alone (a
// kernel calling these with a run-time n_in compiled, silently, to an empty body).
constexpr int x_stage_vecs(int v, int n_in) { return kCfgs[v].x_rows * (n_in / 8); }
constexpr size_t x_stage_bytes(int v, int n_in) { return size_t(x_stage_vecs(v, n_in)) * 16; }

// Where staged row i's 16-byte vector col sits in its row: col ^ x_swizzle(n_vec, i), n_vec = K / 8
// vectors a row (a multiple of 4: K is a multiple of 32). A quarter warp's 16-byte loads (lanes
// g = 2q, 2q + 1, c = 0..3) read the same 64 bytes of k of rows i and i + 1 (i even), 4 vectors
// each; they cover all 32 banks once (conflict-free, whatever the buffer's alignment) when the two
// runs start 4 vectors apart modulo 8. Rows n_vec vectors apart do that when n_vec / 4 is odd; with
// n_vec a multiple of 8 they would share 16 banks (2-way conflicts), so odd rows flip bit 2 of col.
// Within a 128-byte line it is a permutation: the staging stores stay conflict-free too.
constexpr int x_swizzle(int n_vec, int i) { return (n_vec / 4) % 2 == 0 && (i & 1) != 0 ? 4 : 0; }

// The layout's claims at a row length: the swizzle stays within the row, and a quarter warp's rows
// i, i + 1 (i even) start a chunk's runs 4 vectors apart modulo 8.
constexpr bool x_layout_conflict_free(int n_vec) {
  for (int i = 0; i < 16; i += 2)
    for (int ch = 0; 4 * ch < n_vec; ++ch) {
      const int c0 = (4 * ch) ^ x_swizzle(n_vec, i), c1 = (4 * ch) ^ x_swizzle(n_vec, i + 1);
      if (c0 + 4 > n_vec || c1 + 4 > n_vec || ((n_vec + c1 - c0) % 8 + 8) % 8 != 4) return false;
    }
  return true;
}
static_assert(x_layout_conflict_free(2048 / 8) && x_layout_conflict_free(768 / 8) && x_layout_conflict_free(2080 / 8) &&
                  x_layout_conflict_free(352 / 8) && x_layout_conflict_free(96 / 8) && x_layout_conflict_free(4),
              "staged rows: conflict-free 16-byte fragment loads");

}  // namespace seam::cuda::moe_stream
