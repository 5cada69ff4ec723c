#include "backend/cuda/gemv_bulk.h"

#include <optional>
#include <type_traits>

#include "backend/cuda/bulk_copy.cuh"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/gemv_epilogue.cuh"

namespace seam::cuda {

namespace {

// A block is one producer warp, whose first lane issues the bulk copies, and four consumer
// warps (one per SM scheduler), which dot the staged weight rows with x. One block per SM:
// each streams a contiguous share of the matrix's stages through a ring in shared memory.
constexpr int kConsumerWarps = 4;
constexpr int kThreads = (kConsumerWarps + 1) * 32;
constexpr int kMaxRing = 4;
constexpr int64_t kStageBytes = 32 << 10;  // weight bytes of one stage, at most
// Dynamic shared memory of a block, at most: two blocks fit on an H200 SM (228 KB, 1 KB
// reserved per block, ~0.3 KB static), so the next GEMV's block can start its copies while
// this one drains (PDL) instead of waiting for the SM to empty.
constexpr int64_t kBlockSmemBudget = 112 << 10;

// How a launch cuts the matrix: stages of `items` consecutive items (a power of two; for
// RoPE a divisor of head_dim / 2, so a stage never leaves one half of a head), each the
// gemv_rows(epi) runs of `items` contiguous weight rows. A stage of fewer than
// kConsumerWarps items gives each item `slices` warps, each one contiguous part of K.
struct BulkPlan {
  int items;       // per stage
  int slices;      // warps per item (1 when items >= kConsumerWarps)
  int ring;        // stages in flight or being read
  int n_stages;    // of the whole matrix
  int x_bytes;     // the staged x, padded to 128 bytes: where the ring starts
  int row_bytes;   // one weight row
};

std::optional<BulkPlan> plan_of(int epi, int n_items, int n_in, int head_dim, int elem) {
  const int64_t rows = gemv_rows(epi), row_bytes = int64_t(n_in) * elem;
  if (n_items <= 0 || n_in <= 0 || row_bytes % 16 != 0 || rows * row_bytes > kStageBytes) return std::nullopt;
  // At most 32 items a consumer warp: lane t writes the warp's t-th.
  int items = 1;
  while (rows * row_bytes * items * 2 <= kStageBytes && items * 2 <= 32 * kConsumerWarps) items *= 2;
  if (epi == kEpiRope) {
    if (head_dim <= 0 || head_dim % 2 != 0) return std::nullopt;
    while (items > 1 && (head_dim / 2) % items != 0) items /= 2;
  }
  BulkPlan p{};
  p.items = items;
  p.slices = items >= kConsumerWarps ? 1 : kConsumerWarps / items;
  p.x_bytes = int((row_bytes + 127) / 128 * 128);
  p.row_bytes = int(row_bytes);
  const int64_t stage = rows * row_bytes * items;
  p.ring = int(std::min<int64_t>(kMaxRing, (kBlockSmemBudget - p.x_bytes) / stage));
  if (p.ring < 2) return std::nullopt;
  p.n_stages = int((int64_t(n_items) + items - 1) / items);
  return p;
}

// One 16-byte shared-memory load. Written out because unpack() of a uint4 that still sits in
// shared memory compiled to eight 16-bit loads (seen in the PTX: ld.shared.u16), which made the
// consumers 2.7x slower than the copies (measured, docs/performance.md).
__device__ __forceinline__ uint4 lds128(const uint4* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(bulk::smem_addr(p)));
  return v;
}

// Dots the weight rows w[q] (shared memory) with x (shared memory) over this lane's 16-byte
// vectors v_begin, v_begin + 32, ... < v_end; every lane gets the sums (two chains per row,
// so the FMA latency of one consumer warp per scheduler is half hidden).
template <typename T, int R>
__device__ __forceinline__ void dot_rows(const uint4* const (&w)[R], const uint4* xv, int v_begin, int v_end,
                                         float (&acc)[R]) {
  float a0[R], a1[R];
#pragma unroll
  for (int q = 0; q < R; ++q) a0[q] = a1[q] = 0.f;
#pragma unroll 4
  for (int v = v_begin; v < v_end; v += 32) {
    float xf[8];
    unpack<T>(lds128(xv + v), xf);
#pragma unroll
    for (int q = 0; q < R; ++q) {
      float wf[8];
      unpack<T>(lds128(w[q] + v), wf);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a0[q] = fmaf(wf[i], xf[i], a0[q]);
        a1[q] = fmaf(wf[i + 4], xf[i + 4], a1[q]);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < R; ++q) acc[q] = warp_sum(a0[q] + a1[q]);
}

// The pipeline: the producer lane issues stage k into slot k % ring once the consumers have
// released the slot's previous stage (k - ring); consumers wait for the slot's bytes, dot,
// release it and write their items. The norm (x * g rounded to T, as gemv.cu's staged form,
// and 1 / rms in the epilogue) is applied while x is staged. Each output has one writer and
// a fixed summation order: deterministic.
template <typename T, typename TO, int EPI>
__global__ void __launch_bounds__(kThreads, 1) gemv_bulk_kernel(GemvArgs<T, TO> a, BulkPlan p) {
#ifdef SEAM_BULK_COPY_ENABLED
  constexpr int R = gemv_rows(EPI);
  extern __shared__ __align__(128) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);        // [n_in] x, or x * g with the norm
  unsigned char* ring = smem + p.x_bytes;    // [ring][R][items][n_in] weights
  __shared__ __align__(8) uint64_t full[kMaxRing], empty[kMaxRing];
  __shared__ float partial[2][kConsumerWarps][R];  // [stage parity, warp, row]: the slices' sums
  __shared__ float scratch[32];                    // block_sum
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool producer = warp == kConsumerWarps;
  // This block's stages: a balanced, contiguous share.
  const int s_begin = int(int64_t(blockIdx.x) * p.n_stages / gridDim.x);
  const int n_mine = int(int64_t(blockIdx.x + 1) * p.n_stages / gridDim.x) - s_begin;
  const uint32_t run_bytes = uint32_t(p.items) * uint32_t(p.row_bytes), stage_bytes = R * run_bytes;

  if (threadIdx.x == 0) {
    for (int s = 0; s < p.ring; ++s) {
      bulk::mbar_init(&full[s], 1);
      bulk::mbar_init(&empty[s], kConsumerWarps);
    }
    bulk::mbar_fence_init();
  }
  __syncthreads();

  const uint64_t policy = bulk::policy_evict_first();
  auto issue = [&](int k) {  // this block's stage k into slot k % ring
    const int slot = k % p.ring, item0 = (s_begin + k) * p.items;
    const uint32_t bytes = uint32_t(min(p.items, a.n_out - item0)) * uint32_t(p.row_bytes);
    bulk::mbar_arrive_expect_tx(&full[slot], R * bytes);
#pragma unroll
    for (int q = 0; q < R; ++q)
      bulk::copy_g2s(ring + slot * stage_bytes + q * run_bytes, a.w + gemv_item_row<EPI>(a, item0, q) * a.n_in, bytes,
                     &full[slot], policy);
  };
  // The weights never change during a run: with early_load the first stages are in flight
  // before the previous kernel has finished (PDL).
  const int prologue = min(n_mine, p.ring);
  const bool issuer = producer && lane == 0;
  if (issuer && a.early_load)
    for (int k = 0; k < prologue; ++k) issue(k);
  pdl_begin();
  if (issuer && !a.early_load)
    for (int k = 0; k < prologue; ++k) issue(k);

  // x (or x * g) into shared memory, with the norm's sum of squares: every thread.
  const int n_vec = a.n_in / 8;
  float ss = 0.f;
  for (int v = threadIdx.x; v < n_vec; v += kThreads) {
    float xf[8];
    unpack<T>(__ldg(reinterpret_cast<const uint4*>(a.x) + v), xf);
    if (a.norm_w != nullptr) {
      float gf[8];
      unpack<T>(__ldg(reinterpret_cast<const uint4*>(a.norm_w) + v), gf);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        ss = fmaf(xf[i], xf[i], ss);
        xf[i] *= gf[i];
      }
    }
    store_vec<T>(xs + v * 8, xf);
  }
  float inv_rms = 1.f;
  if (a.norm_w != nullptr)  // block_sum's barriers also publish xs
    inv_rms = 1.f / sqrtf(block_sum(ss, scratch) / float(a.n_in) + a.eps);  // as rms_norm.cu
  else
    __syncthreads();

  if (producer) {
    if (issuer)
      for (int k = prologue; k < n_mine; ++k) {
        bulk::mbar_wait(&empty[k % p.ring], (k / p.ring - 1) & 1);
        issue(k);
      }
    return;
  }

  const uint4* xv = reinterpret_cast<const uint4*>(xs);
  for (int k = 0; k < n_mine; ++k) {
    const int slot = k % p.ring, item0 = (s_begin + k) * p.items, n_items = min(p.items, a.n_out - item0);
    const unsigned char* stage = ring + slot * stage_bytes;
    if (p.slices == 1) {
      // Warp w takes items w, w + 4, ...; lane t of it holds and writes the t-th of them.
      const int mine = lane * kConsumerWarps + warp;
      const float prev = a.accumulate && mine < n_items ? to_float(a.out[item0 + mine]) : 0.f;  // before the wait
      bulk::mbar_wait(&full[slot], (k / p.ring) & 1);
      for (int j = warp, t = 0; j < n_items; j += kConsumerWarps, ++t) {
        const uint4* w[R];
#pragma unroll
        for (int q = 0; q < R; ++q) w[q] = reinterpret_cast<const uint4*>(stage + q * run_bytes + j * p.row_bytes);
        float acc[R];
        dot_rows<T, R>(w, xv, lane, n_vec, acc);
        if (lane == t) gemv_write_item<EPI>(a, 0, item0 + j, acc, inv_rms, prev);
      }
      __syncwarp();
      if (lane == 0) bulk::mbar_arrive(&empty[slot]);
    } else {
      // Item j = warp / slices; each of its warps one contiguous part of K; the first writes.
      const int j = warp / p.slices, slice = warp % p.slices;
      const bool writer = slice == 0 && lane == 0 && j < n_items;
      const float prev = a.accumulate && writer ? to_float(a.out[item0 + j]) : 0.f;  // before the wait
      const int per = (n_vec + p.slices - 1) / p.slices, v0 = slice * per, v1 = min(n_vec, v0 + per);
      float acc[R];
#pragma unroll
      for (int q = 0; q < R; ++q) acc[q] = 0.f;
      bulk::mbar_wait(&full[slot], (k / p.ring) & 1);
      if (j < n_items) {
        const uint4* w[R];
#pragma unroll
        for (int q = 0; q < R; ++q) w[q] = reinterpret_cast<const uint4*>(stage + q * run_bytes + j * p.row_bytes);
        dot_rows<T, R>(w, xv, v0 + lane, v1, acc);
      }
      __syncwarp();
      if (lane == 0) {
        bulk::mbar_arrive(&empty[slot]);
#pragma unroll
        for (int q = 0; q < R; ++q) partial[k & 1][warp][q] = acc[q];
      }
      // Two partial buffers by stage parity: stage k + 2 overwrites stage k's only after every
      // consumer has passed stage k + 1's barrier, i.e. finished reading stage k's.
      bulk::named_barrier_sync(1, kConsumerWarps * 32);
      if (writer) {
        float sum[R];
#pragma unroll
        for (int q = 0; q < R; ++q) {
          sum[q] = 0.f;
          for (int s = 0; s < p.slices; ++s) sum[q] += partial[k & 1][warp + s][q];  // fixed order
        }
        gemv_write_item<EPI>(a, 0, item0 + j, sum, inv_rms, prev);
      }
    }
  }
#endif
}

template <typename T, typename TO, int EPI>
void launch_epi(const GemvArgs<T, TO>& a, const BulkPlan& p, cudaStream_t stream) {
  static const int sms = [] {
    int dev = 0, n = 0;
    SEAM_CUDA_CHECK(cudaGetDevice(&dev));
    SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(gemv_bulk_kernel<T, TO, EPI>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(kBlockSmemBudget)));
    return n;
  }();
  const int64_t smem = p.x_bytes + int64_t(p.ring) * gemv_rows(EPI) * p.items * p.row_bytes;
  SEAM_ASSERT(smem <= kBlockSmemBudget, "GEMV (bulk): plan exceeds its shared memory");
  launch_kernel(gemv_bulk_kernel<T, TO, EPI>, std::min(sms, p.n_stages), kThreads, size_t(smem), stream, a, p);
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool gemv_bulk_fits(int epi, int n_items, int n_in, int head_dim, int elem) {
  static const bool sm90 = [] {
    int dev = 0, major = 0;
    SEAM_CUDA_CHECK(cudaGetDevice(&dev));
    SEAM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    return major >= 9;
  }();
  return sm90 && plan_of(epi, n_items, n_in, head_dim, elem).has_value();
}

template <typename T, typename TO>
void launch_gemv_bulk(const GemvArgs<T, TO>& a, int epi, cudaStream_t stream) {
  const auto p = plan_of(epi, a.n_out, a.n_in, a.head_dim, int(sizeof(T)));
  SEAM_ASSERT(p.has_value(), "GEMV (bulk): shape does not fit (gemv_bulk_fits)");
  if (epi == kEpiPlain) return launch_epi<T, TO, kEpiPlain>(a, *p, stream);
  if constexpr (std::is_same_v<T, TO>) {  // the paired epilogues write x's dtype (gemv_fusion_applies)
    if (epi == kEpiGlu) return launch_epi<T, TO, kEpiGlu>(a, *p, stream);
    if (epi == kEpiRope) return launch_epi<T, TO, kEpiRope>(a, *p, stream);
  }
  SEAM_ASSERT(false, "GEMV (bulk): paired epilogue with a different output dtype");
}

template void launch_gemv_bulk(const GemvArgs<__nv_bfloat16, __nv_bfloat16>&, int, cudaStream_t);
template void launch_gemv_bulk(const GemvArgs<__nv_bfloat16, float>&, int, cudaStream_t);
template void launch_gemv_bulk(const GemvArgs<__half, __half>&, int, cudaStream_t);
template void launch_gemv_bulk(const GemvArgs<__half, float>&, int, cudaStream_t);

}  // namespace seam::cuda
