// The skinny FP8 GEMM (fp8_gemm_skinny_wgmma.h): decode batches of 5..64 rows, weight-streaming,
// swap-AB wgmma with the scales in its epilogue, split K with a deterministic reduction.
//
// Why: at 64 rows the product streams the weight once and does ~64 FLOP a weight byte, so it is
// memory-bound (the H200's ~4.3 TB/s against ~2 PFLOP/s of FP8). The existing routes ran at about
// half the byte floor (cuBLASLt's unscaled GEMM + a scale kernel; the one-block wgmma kernel with x
// as A wastes its m64 on the rows), and mma.sync's E4M3 rate on Hopper (~206 TFLOP/s) is too low.
// Swapped, the weight is A (its 64-row m of wgmma is 64 output features, all real) and the few
// tokens are B's n (8, 16, 32 or 64: the rows padded to the bucket, zero-filled by TMA).
//
// Structure (fp8_gemm_wgmma_ws_kernel.cuh's TMA + mbarrier ring, one work unit a block):
//  * A block computes a tile of 128 (or 256) output features x n tokens over a range of K blocks
//    (its split): block b takes tile b / splits, split b % splits, K blocks [split n_kb / splits,
//    (split + 1) n_kb / splits). 288 threads: warps 0-7 are two consumer warpgroups (features
//    0-63 and 64-127 of each 128 of the tile: one m64 wgmma each, or two for 256), warp 8 the
//    producer (a warpgroup must be 4 aligned warps, so the lone producer warp goes last; no
//    setmaxnreg: the consumers need at most ~120 registers). 256-feature tiles (gate_up-sized
//    products at n >= 32) halve the x bytes each block reads from L2 per weight byte.
//  * Producer, per K block: lane 0 expects the stage's bytes and issues two TMA copies (w's
//    [128 or 256 features][128 k] and x's [n tokens][128 k], SW128, out-of-range rows zero-filled); the
//    32 lanes cp.async the scales (block128: xs(tokens, kb) and ws(features, kb) into the stage;
//    otherwise, with the first K block only, the epilogue's xs(tokens) and ws(features)) and
//    arrive on the stage's full barrier once their copies land. Stages: ~200 KB of them for one
//    block an SM (blocks_per_sm 1: 8 stages of 24 KB at n = 64, 128 KB of weight in flight), or
//    ~100 KB for two (blocks_per_sm 2; 128-feature tiles): the kernel is memory-bound, and the
//    bytes in flight an SM are what reach the bandwidth.
//  * Consumers, per K block: wait for the stage (mbarrier::wait_in_flight: no C++ poll loop next
//    to wgmma), issue 4 wgmma m64nNk32 into a fresh partial, wait, promote it into the float32 sums
//    (block128: times xs(token, kb) * ws(feature, kb) from the stage), release the stage (lane 0 of
//    each warp arrives on its empty barrier). No wgmma is in flight across a wait or a branch.
//  * Barriers: full[s] (33 arrivals + the stage's bytes), empty[s] (8 arrivals, the consumer
//    warps); the i-th K block of the block uses stage i % S in round i / S (consumers wait on full's
//    parity (i / S) & 1, the producer before round r > 0 on empty's parity (r - 1) & 1).
//  * Split K (splits > 1): every block writes its float32 sums (register order: [features / 128]
//    [n / 8][256 threads][4], float4 stores) to its slot of the workspace, fences, and one thread takes the
//    tile's ticket (atomicAdd); the block that draws splits - 1 is the last: it resets the ticket to
//    0 (so the next launch and a graph replay find it zero without a memset), adds the tile's
//    partials in split order 0, 1, ... (its own from its registers, the others' from L2: the same
//    float32 sums whichever block arrives last, so two runs are bit-equal) and runs the epilogue;
//    the others exit.
//  * Epilogue: the accumulator holds (feature, token) pairs of adjacent tokens; one shuffle with
//    the lane 4 apart (the neighbouring feature) turns them into pairs of adjacent features of one
//    token, out[token][feature .. feature + 1], stored as one aligned pair where out allows
//    (fp8_gemm_wgmma.cu's store_pair, the same scale / bias / accumulate arithmetic).
//
// Numerics: the promotion and epilogue arithmetic of fp8_gemm_wgmma.cu (fresh partial per K block,
// fmaf(xs * ws, P, acc) for block128, acc += P then (xs * ws) * acc otherwise); split K adds the
// splits' float32 sums in a fixed order. Exactly representable values: bit-exact.
//
// ptxas (CUDA 13.0): every instantiation without spills and without C7518 / C7514 (wgmma
// serialisation) warnings.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/fp8_gemm_skinny_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma_common.cuh"
#include "backend/cuda/mbarrier.cuh"
#include "backend/cuda/tma.cuh"
#include "backend/cuda/wgmma.cuh"

namespace seam::cuda {

namespace {

using fp8_wgmma_detail::cp_async_4;
using fp8_wgmma_detail::store_pair;

constexpr int kBlockK = 128;           // K per stage: one SW128 line of E4M3 codes per row
constexpr int kLine = 128;             // bytes of one swizzled line
constexpr int kConsumerThreads = 256;  // warpgroups 0 and 1
constexpr int kThreads = kConsumerThreads + 32;
constexpr int kConsumerWarps = kConsumerThreads / 32;
constexpr int kFullArrivals = 1 + 32;  // lane 0's expect_tx + each producer lane's cp.async arrival

// A tile of SUB * 128 features: each consumer warpgroup runs SUB m64 blocks (features
// 128 sub + 64 wg ..). A stage: the weight's [SUB * 128 features][128 k] lines, then x's
// [N tokens][128 k]; the scales of each stage ([N] xs, then [SUB * 128] ws; block128), the
// epilogue's scales (per-tensor / per-channel).
template <int N, int BPS, int SUB>
struct SkinnyTiling {
  static_assert(N == 8 || N == 16 || N == 32 || N == 64, "wgmma N buckets");
  static_assert(BPS == 1 || BPS == 2, "one or two blocks an SM");
  static_assert(SUB == 1 || (SUB == 2 && BPS == 1), "256-feature tiles: one block an SM (40 KB stages)");
  static constexpr int kTileF = 128 * SUB;
  static constexpr int kWBytes = kTileF * kLine;
  static constexpr int kXBytes = N * kLine;
  static constexpr int kStageBytes = kWBytes + kXBytes;
  static constexpr int kScaleFloats = N + kTileF;
  static constexpr int kBudget = BPS == 1 ? 200 * 1024 : 100 * 1024;
  static constexpr int kStages = std::min(16, kBudget / (kStageBytes + kScaleFloats * 4));
  static constexpr size_t kSmemBytes = size_t(kStages) * (kStageBytes + kScaleFloats * 4) + kScaleFloats * 4 +
                                       size_t(2) * kStages * 8 + 16 + 1024;  // +1024: align to a swizzle atom
  static_assert(kWBytes % 1024 == 0 && kXBytes % 1024 == 0, "stages start on swizzle atoms");
  static_assert(kStages >= 4, "a ring deep enough to stream");
  static_assert(kSmemBytes * BPS <= 227 * 1024, "BPS blocks' shared memory on one SM");
};


// The consumer warpgroups' own barrier (the producer warp may have left).
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
}

// map_w: w codes [n_out, n_in] (boxes SUB * 128 rows x 128); map_x: codes [n_rows, n_in] (boxes N
// rows x 128) (tma.cuh). xs [n_groups, n_rows] (BLOCK: n_groups = n_in / 128); ws: BLOCK [n_out, n_in /
// 128], else [n_out] (ws_step 1) or [1] (ws_step 0). partials / tickets: the workspace (splits > 1).
template <typename T, bool BLOCK, int N, int BPS, int SUB>
__global__ void __launch_bounds__(kThreads, BPS)
    fp8_gemm_skinny_wgmma_kernel(const __grid_constant__ CUtensorMap map_w, const __grid_constant__ CUtensorMap map_x,
                                 T* out, int64_t out_stride, const float* xs, const float* ws, int ws_step,
                                 const T* bias, int n_rows, int n_out, int n_in, bool accumulate, int splits,
                                 float* partials, unsigned* tickets) {
#if defined(SEAM_WGMMA_ENABLED)
  using Tl = SkinnyTiling<N, BPS, SUB>;
  constexpr int S = Tl::kStages, kTileF = Tl::kTileF;
  constexpr int kQ = N / 8;  // accumulator fragments a thread: 8 tokens each
  pdl_begin();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (flash::smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t smem_base = flash::smem_addr(smem);
  float* s_scales = reinterpret_cast<float*>(smem + S * Tl::kStageBytes);  // [S][kScaleFloats] (BLOCK)
  float* s_epi = s_scales + S * Tl::kScaleFloats;                          // [kScaleFloats] (!BLOCK)
  const uint32_t full_bar = flash::smem_addr(s_epi + Tl::kScaleFloats);
  const uint32_t empty_bar = full_bar + S * 8;
  int* s_last = reinterpret_cast<int*>(s_epi + Tl::kScaleFloats + 4 * S);  // after the 2 S barriers
  const int tid = threadIdx.x, lane = tid & 31;
  const int n_kb = n_in / kBlockK;
  const int tile = int(blockIdx.x) / splits, split = int(blockIdx.x) % splits;
  const int f0 = tile * kTileF;
  const int kb0 = int(int64_t(split) * n_kb / splits), nk = int(int64_t(split + 1) * n_kb / splits) - kb0;
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      mbarrier::init(full_bar + 8 * s, kFullArrivals);
      mbarrier::init(empty_bar + 8 * s, kConsumerWarps);
    }
    mbarrier::fence_init();
  }
  __syncthreads();  // the only block-wide barrier

  if (tid >= kConsumerThreads) {
    // ---- producer (warp 8) ----
    if (lane == 0) {
      tma::prefetch(&map_w);
      tma::prefetch(&map_x);
    }
    for (int i = 0; i < nk; ++i) {
      const int s = i % S, round = i / S, kb = kb0 + i;
      if (round > 0) mbarrier::wait(empty_bar + 8 * s, (round - 1) & 1);  // round - 1's wgmmas retired
      const uint32_t bar = full_bar + 8 * s;
      if (lane == 0) {
        mbarrier::arrive_expect_tx(bar, Tl::kStageBytes);
        const uint32_t st = smem_base + s * Tl::kStageBytes;
        tma::load_2d(st, &map_w, bar, kb * kBlockK, f0);
        tma::load_2d(st + Tl::kWBytes, &map_x, bar, kb * kBlockK, 0);
      }
      if (BLOCK || i == 0) {  // tokens, then features; past the matrix: zero-filled
        float* sc = BLOCK ? s_scales + s * Tl::kScaleFloats : s_epi;
#pragma unroll 1
        for (int c = lane; c < Tl::kScaleFloats; c += 32) {
          if (c < N) {
            const bool valid = c < n_rows;
            cp_async_4(sc + c, valid ? xs + (BLOCK ? int64_t(kb) * n_rows : 0) + c : xs, valid);
          } else {
            const int o = f0 + (c - N);
            const bool valid = o < n_out;
            cp_async_4(sc + c, valid ? ws + (BLOCK ? int64_t(o) * n_kb + kb : int64_t(o) * ws_step) : ws, valid);
          }
        }
      }
      mbarrier::cp_async_arrive(bar);  // once this lane's copies (if any) landed
    }
    flash::cp_async_wait<0>();  // no copy outlives the thread
    return;
  }

  // ---- consumers ----
  const int wg = tid >> 7, wg_warp = (tid >> 5) & 3;
  // This thread's accumulator entries (wgmma.cuh): tile features f_lo (e 0, 1) and f_lo + 8 (e 2, 3),
  // tokens 8 q + c0 (e 0, 2) and + 1 (e 1, 3).
  const int f_lo = wg * 64 + wg_warp * 16 + (lane >> 2), c0 = 2 * (lane & 3);
  float acc[SUB][kQ][4], p[SUB][kQ][4];
#pragma unroll
  for (int u = 0; u < SUB; ++u)
#pragma unroll
    for (int q = 0; q < kQ; ++q) acc[u][q][0] = acc[u][q][1] = acc[u][q][2] = acc[u][q][3] = 0.f;
  for (int i = 0; i < nk; ++i) {
    const int s = i % S;
    mbarrier::wait_in_flight(full_bar + 8 * s, (i / S) & 1);
    const uint32_t st = smem_base + s * Tl::kStageBytes;
    const uint64_t desc_b = wgmma::desc_sw128(st + Tl::kWBytes, 16, 1024);
    wgmma::fence();  // p was read by the last promotion
#pragma unroll
    for (int u = 0; u < SUB; ++u) {  // the warpgroup's 64 features of each 128
      const uint64_t desc_a = wgmma::desc_sw128(st + (u * 128 + wg * 64) * kLine, 16, 1024);
#pragma unroll
      for (int ks = 0; ks < kBlockK / 32; ++ks)
        wgmma::m64k32_e4m3_ss<N>(p[u], wgmma::desc_advance(desc_a, ks * 32), wgmma::desc_advance(desc_b, ks * 32),
                                 ks > 0);
    }
    wgmma::commit();
    wgmma::wait<0>();
#pragma unroll
    for (int u = 0; u < SUB; ++u) wgmma::fence_operands(p[u]);
#pragma unroll
    for (int u = 0; u < SUB; ++u) {
      if constexpr (BLOCK) {
        const float* sc = s_scales + s * Tl::kScaleFloats;
        const float w_lo = sc[N + u * 128 + f_lo], w_hi = sc[N + u * 128 + f_lo + 8];
#pragma unroll
        for (int q = 0; q < kQ; ++q) {
          const float x0 = sc[8 * q + c0], x1 = sc[8 * q + c0 + 1];
          acc[u][q][0] = fmaf(x0 * w_lo, p[u][q][0], acc[u][q][0]);
          acc[u][q][1] = fmaf(x1 * w_lo, p[u][q][1], acc[u][q][1]);
          acc[u][q][2] = fmaf(x0 * w_hi, p[u][q][2], acc[u][q][2]);
          acc[u][q][3] = fmaf(x1 * w_hi, p[u][q][3], acc[u][q][3]);
        }
      } else {
#pragma unroll
        for (int q = 0; q < kQ; ++q)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[u][q][e] += p[u][q][e];
      }
    }
    // The stage goes back once the warp's wgmmas on it retired and its scales were read.
    __syncwarp();
    if (lane == 0) mbarrier::arrive(empty_bar + 8 * s);
  }

  if (splits > 1) {
    // This block's sums to its slot; the tile's last-arriving block adds every slot in split order.
    // A slot: [SUB * kQ][256 threads] float4s.
    constexpr int kF4 = SUB * kQ;
    float4* slots = reinterpret_cast<float4*>(partials) + int64_t(tile) * splits * kF4 * kConsumerThreads + tid;
#pragma unroll
    for (int u = 0; u < SUB; ++u)
#pragma unroll
      for (int q = 0; q < kQ; ++q)
        __stcg(slots + (int64_t(split) * kF4 + u * kQ + q) * kConsumerThreads,
               make_float4(acc[u][q][0], acc[u][q][1], acc[u][q][2], acc[u][q][3]));
    __threadfence();  // the slot is visible device-wide before the ticket says so
    consumers_sync();
    if (tid == 0) {
      const bool last = atomicAdd(tickets + tile, 1u) == unsigned(splits - 1);
      if (last) atomicExch(tickets + tile, 0u);  // every split has arrived: the next launch starts at 0
      *s_last = last;
    }
    consumers_sync();
    if (!*s_last) return;
    __threadfence();  // acquire: the other blocks' slots, published before their tickets
    // sum = P_0 + P_1 + ... in split order; this block's own P_split from its registers (acc),
    // the others' from their slots (p holds the running sum: its wgmma use is over). Where the
    // three register sets (acc, the sum, the loads in flight: 3 SUB N / 2 floats) would not fit
    // ptxas's cap for 288 threads (168 registers a thread for one block an SM, 96 for two), the
    // block reads its own slot back instead (n = 64 on the two-block ring or in 256-feature tiles).
    constexpr bool kOwnInRegisters = 3 * SUB * N / 2 + 24 <= (BPS == 1 ? 168 : 96);
    for (int j = 0; j < splits; ++j)
#pragma unroll
      for (int u = 0; u < SUB; ++u)
#pragma unroll
        for (int q = 0; q < kQ; ++q) {
          float4 v;
          if (kOwnInRegisters && j == split)
            v = make_float4(acc[u][q][0], acc[u][q][1], acc[u][q][2], acc[u][q][3]);
          else
            v = __ldcg(slots + (int64_t(j) * kF4 + u * kQ + q) * kConsumerThreads);
          if (j == 0) {
            p[u][q][0] = v.x, p[u][q][1] = v.y, p[u][q][2] = v.z, p[u][q][3] = v.w;
          } else {
            p[u][q][0] += v.x, p[u][q][1] += v.y, p[u][q][2] += v.z, p[u][q][3] += v.w;
          }
        }
#pragma unroll
    for (int u = 0; u < SUB; ++u)
#pragma unroll
      for (int q = 0; q < kQ; ++q)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[u][q][e] = p[u][q][e];
  }

  // Epilogue: lanes g and g ^ 1 (4 apart) hold features F and F ^ 1 of the same token pair; after
  // one exchange an even g holds token 8 q + c0 and an odd g token 8 q + c0 + 1, each for the
  // features (F & ~1, F | 1): a pair of adjacent outputs (N % 8 == 0 keeps both in range).
  const bool paired = out_stride % 2 == 0 && reinterpret_cast<uintptr_t>(out) % (2 * sizeof(T)) == 0;
  const int odd = (lane >> 2) & 1;
#pragma unroll
  for (int u = 0; u < SUB; ++u)
#pragma unroll
    for (int q = 0; q < kQ; ++q)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = acc[u][q][2 * h], v1 = acc[u][q][2 * h + 1];
        const float recv = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
        float y0 = odd ? recv : v0, y1 = odd ? v1 : recv;
        const int token = 8 * q + c0 + odd, fb = u * 128 + (f_lo & ~1) + 8 * h;
        const int o = f0 + fb;
        if (token >= n_rows || o >= n_out) continue;
        if constexpr (!BLOCK) {
          const float x_s = s_epi[token];
          y0 = (x_s * s_epi[N + fb]) * y0;
          y1 = (x_s * s_epi[N + fb + 1]) * y1;
        }
        if (bias) {
          y0 += to_float(bias[o]);
          y1 += to_float(bias[o + 1]);
        }
        store_pair(out + int64_t(token) * out_stride + o, y0, y1, accumulate, paired);
      }
#else
  // Built without sm_90a: fp8_gemm_skinny_wgmma_applies is false, the kernel never launched.
  (void)map_w;
  (void)map_x;
  __trap();
#endif
}

int blocks_per_sm_of(int blocks_per_sm) {
  // SEAM_FP8_SKINNY_BLOCKS_PER_SM: 1 (default: one block an SM with a ~200 KB ring) or 2 (two of
  // ~100 KB: a block's pipeline fill hides behind the other's stream; 128-feature tiles only).
  static const int from_env = env_choice("SEAM_FP8_SKINNY_BLOCKS_PER_SM", 1, {1, 2});
  SEAM_CHECK(blocks_per_sm >= 0 && blocks_per_sm <= 2, "fp8 gemm (skinny wgmma): blocks_per_sm must be 0, 1 or 2, got ",
             blocks_per_sm);
  return blocks_per_sm == 0 ? from_env : blocks_per_sm;
}

int tile_features_of(int tile_features) {
  // SEAM_FP8_SKINNY_TILE: auto (0, the default: the rule in fp8_gemm_skinny_wgmma_plan), 128 or 256.
  static const int from_env = env_choice("SEAM_FP8_SKINNY_TILE", 0, {0, 128, 256});
  SEAM_CHECK(tile_features == 0 || tile_features == 128 || tile_features == 256,
             "fp8 gemm (skinny wgmma): tile_features must be 0, 128 or 256, got ", tile_features);
  return tile_features == 0 ? from_env : tile_features;
}

template <typename T, bool BLOCK, int N, int BPS, int SUB>
void launch_typed(const Fp8SkinnyPlan& plan, const Tensor& out, const Tensor& codes, const Tensor& act_scales,
                  const Fp8Weight& w, const Tensor& bias, bool accumulate, cudaStream_t stream, void* workspace) {
  using Tl = SkinnyTiling<N, BPS, SUB>;
  auto* kernel = fp8_gemm_skinny_wgmma_kernel<T, BLOCK, N, BPS, SUB>;
  once_per_device(reinterpret_cast<const void*>(kernel), [kernel] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                         int(cudaSharedmemCarveoutMaxShared)));
  });
  const int64_t n = out.size(0), n_out = w.w.size(0), n_in = w.w.size(1);
  // Encoded per launch (about a microsecond of host time): the maps hold the operands' addresses,
  // and a captured launch keeps its own copy of them.
  const CUtensorMap map_w =
      tma::encode_u8_sw128(w.w.data, uint64_t(n_out), uint64_t(n_in), uint64_t(n_in), uint32_t(Tl::kTileF));
  const CUtensorMap map_x = tma::encode_u8_sw128(codes.data, uint64_t(n), uint64_t(n_in), uint64_t(n_in), N);
  const int ws_step = w.w_scheme == Fp8WeightScheme::per_tensor ? 0 : 1;
  float* partials = nullptr;
  unsigned* tickets = nullptr;
  if (plan.splits > 1) {
    tickets = static_cast<unsigned*>(workspace);
    partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + size_t(kFp8SkinnyTickets) * 4);
  }
  launch_kernel(kernel, dim3(unsigned(plan.blocks())), dim3(kThreads), Tl::kSmemBytes, stream, map_w, map_x,
                out.ptr<T>(), out.stride[0], act_scales.ptr<const float>(), w.w_scale.ptr<const float>(), ws_step,
                bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), int(n), int(n_out), int(n_in),
                accumulate, plan.splits, partials, tickets);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, bool BLOCK, int N>
void launch_variant(const Fp8SkinnyPlan& plan, const Tensor& out, const Tensor& codes, const Tensor& act_scales,
                    const Fp8Weight& w, const Tensor& bias, bool accumulate, cudaStream_t stream, void* workspace) {
  if (plan.features == 256)
    return launch_typed<T, BLOCK, N, 1, 2>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
  if (plan.blocks_per_sm == 2)
    return launch_typed<T, BLOCK, N, 2, 1>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
  launch_typed<T, BLOCK, N, 1, 1>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
}

template <typename T, bool BLOCK>
void launch_n(const Fp8SkinnyPlan& plan, const Tensor& out, const Tensor& codes, const Tensor& act_scales,
              const Fp8Weight& w, const Tensor& bias, bool accumulate, cudaStream_t stream, void* workspace) {
  switch (plan.n) {
    case 8:
      return launch_variant<T, BLOCK, 8>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
    case 16:
      return launch_variant<T, BLOCK, 16>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
    case 32:
      return launch_variant<T, BLOCK, 32>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
    default:
      return launch_variant<T, BLOCK, 64>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
  }
}

}  // namespace

Fp8SkinnyPlan fp8_gemm_skinny_wgmma_plan(int64_t rows, int64_t n_out, int64_t n_in, int n_sms, int blocks_per_sm,
                                         int splits, int tile_features) {
  Fp8SkinnyPlan plan;
  n_sms = std::max(1, n_sms);
  plan.n = rows <= 8 ? 8 : rows <= 16 ? 16 : rows <= 32 ? 32 : 64;
  plan.blocks_per_sm = blocks_per_sm_of(blocks_per_sm);
  const int features = tile_features_of(tile_features);
  SEAM_CHECK(!(features == 256 && blocks_per_sm == 2),
             "fp8 gemm (skinny wgmma): 256-feature tiles run one block an SM, not two");
  // 256-feature tiles halve the x tiles every block reads from L2 (at n = 64 an x tile is half a
  // 128-feature weight tile's bytes) where there are enough of them to fill the SMs without split K
  // (gate_up's 28,672 outputs: 112 tiles); their 40 KB stages leave room for one block an SM.
  if (features == 256 ||
      (features == 0 && plan.blocks_per_sm == 1 && plan.n >= 32 && int64_t(div_up(n_out, 256)) * 2 >= n_sms))
    plan.features = 256;
  if (plan.features == 256) plan.blocks_per_sm = 1;
  plan.tiles = int(div_up(n_out, plan.features));
  const int n_kb = int(std::max<int64_t>(1, n_in / kBlockK));
  // Split K needs a ticket a tile; a split needs at least one K block.
  const int max_splits = plan.tiles <= kFp8SkinnyTickets ? std::min(n_kb, std::max(1, 65535 / plan.tiles)) : 1;
  if (splits > 0) {
    plan.splits = std::clamp(splits, 1, max_splits);
    return plan;
  }
  // The cost of s splits in K blocks of weight an SM streams: the blocks spread evenly over the
  // SMs (ceil(tiles s / SMs) of them an SM, each ceil(n_kb / s) K blocks), plus, when split, each
  // block's float32 partial ([features x n] floats written to and read back from L2: ~one K block of
  // weight at n = 64) and the last block's serial reduction of the tile's s partials.
  const double partial = plan.n / 64.0;
  double best = 0;
  for (int s = 1; s <= max_splits; ++s) {
    const double per_sm = double(div_up(int64_t(plan.tiles) * s, n_sms));
    const double cost = per_sm * (double(div_up(n_kb, s)) + (s > 1 ? partial : 0.0)) + (s > 1 ? partial * s : 0.0);
    if (s == 1 || cost < best) {
      best = cost;
      plan.splits = s;
    }
  }
  return plan;
}

size_t fp8_gemm_skinny_wgmma_workspace_bytes(const Fp8SkinnyPlan& plan) {
  if (plan.splits <= 1) return 0;
  return size_t(kFp8SkinnyTickets) * 4 + size_t(plan.blocks()) * size_t(plan.features) * size_t(plan.n) * 4;
}

bool fp8_gemm_skinny_wgmma_applies(const Tensor& out, const Tensor& codes, const Fp8Weight& w) {
  return fp8_gemm_wgmma_applies(out, codes, w) && codes.size(0) >= 1 && codes.size(0) <= kFp8SkinnyMaxRows &&
         tma::encode_tiled_fn() != nullptr;
}

Fp8SkinnyPlan fp8_gemm_skinny_wgmma_plan_for(const Tensor& codes, const Fp8Weight& w, int blocks_per_sm, int splits,
                                             int tile_features) {
  return fp8_gemm_skinny_wgmma_plan(codes.size(0), w.w.size(0), w.w.size(1), current_device_sms(), blocks_per_sm,
                                    splits, tile_features);
}

void launch_fp8_gemm_skinny_wgmma(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                                  const Tensor& bias, bool accumulate, cudaStream_t stream, void* workspace,
                                  size_t workspace_bytes, int blocks_per_sm, int splits, int tile_features) {
  SEAM_CHECK(fp8_gemm_skinny_wgmma_applies(out, codes, w), "fp8 gemm (skinny wgmma): not available for out ",
             out.shape_str(), " codes ", codes.shape_str(), " w ", w.w.shape_str(),
             " (needs an sm_90a build, a CC 9.0 GPU, the driver's TMA encoder, 1..", kFp8SkinnyMaxRows,
             " rows, K % 128 == 0, N % 8 == 0, contiguous aligned codes)");
  const int64_t n = out.size(0), n_in = w.w.size(1);
  const bool block = w.w_scheme == Fp8WeightScheme::block128;
  SEAM_CHECK(act_scales.numel() == (block ? n_in / kFp8Group : 1) * n, "fp8 gemm (skinny wgmma): act_scales ",
             act_scales.shape_str(), " do not match ", n, " rows of the ", fp8_weight_scheme_name(w.w_scheme),
             " scheme");
  const Fp8SkinnyPlan plan = fp8_gemm_skinny_wgmma_plan_for(codes, w, blocks_per_sm, splits, tile_features);
  const size_t need = fp8_gemm_skinny_wgmma_workspace_bytes(plan);
  SEAM_CHECK(need <= workspace_bytes && (need == 0 || workspace != nullptr), "fp8 gemm (skinny wgmma): ", plan.splits,
             " splits of ", plan.tiles, " tiles need ", need, " bytes of workspace, ", workspace_bytes, " given");
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "fp8 gemm (skinny wgmma)", [&] {
    if (block) return launch_n<T, true>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
    launch_n<T, false>(plan, out, codes, act_scales, w, bias, accumulate, stream, workspace);
  });
}

}  // namespace seam::cuda
