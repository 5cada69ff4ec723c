// The tensor-core FP8 GEMV (SEAM_FP8_GEMV=mma, fp8_gemv.h): the weight rows as mma.sync's A
// operand (m16n8k32, E4M3, fp8_mma.cuh), x's E4M3 codes as B. The prologue (stage_x) and the
// epilogue (store_tile) are fp8_gemv.cu's (fp8_gemv_common.cuh); only the inner loop differs.
//
// Work split. A row tile is 8 pair items (set_pair), 16 weight rows: pair g is A's rows g (its
// first row) and g + 8 (its second), so lane group g = lane / 4 loads its pair's two rows and the
// four lanes t = lane % 4 of the group take 16 bytes each, 64 k a step. A lane's 16-byte vector of
// row g (bytes 0..7: a0 | a2 of the first mma, bytes 8..15: of the second) and of row g + 8
// (a1 | a3) feeds two mmas with no shuffle; its B (b0 | b1 of each) is the same 16 k of x row g
// (B's column g: activation row g < M, zero columns past M), one 16-byte shared load. The k a
// fragment position stands for depends on t only, so every row's products pair the same k. One warp over a tile's 16 rows x K is too little parallelism for the
// GPU (Llama-3.1-8B's o_proj: 256 tiles, 2,112 resident warps), so the block's 8 warps split K:
// warp w takes 128-wide groups [w G / 8, (w + 1) G / 8) of the G = ceil(K / 128), and the 8 partial
// sums are added through shared memory in warp order (a fixed order: the same result whichever
// block computes the tile).
//
// Bytes in flight (the default U = 4 steps, sweep reload; Fp8GemvMmaTuning has the variants): a
// lane holds U steps of both rows (128 bytes) and loads the next 4 before the products of these, so ~4 KB a warp, ~64 KB a SM at two blocks (>= the ~32 KB a SM
// Little's law asks for ~4 TB/s at HBM3e latency). Per 16 weight bytes a lane issues one 16-byte
// global load, one mma and half a 16-byte shared load, against the CUDA-core loop's 8 cvt, 16
// integer ops and 16 M FMAs.
//
// Promotion: the tensor core's accumulator restarts every 128 k (two steps: four mmas, its
// 128-k sum of exact products) and is added into float32 registers, times the group's
// activation and weight scales under block128 x dynamic_group128 (as fp8_gemv.cu scales its
// 16-element pieces); per-tensor / per-channel scales apply once, in store_tile.
// x in shared memory: E4M3 codes, row r at r * code_stride(K) (K rounded up to 128, plus 64:
// rows r and r + 1 read by one quarter-warp fall in opposite halves of the 32 banks). The codes
// are fp8_gemv.cu's (the same fp8_act_code of the same staged values): bit-identical with the CPU.
#include <mutex>
#include <utility>
#include <vector>

#include "backend/cuda/fp8_gemv_common.cuh"
#include "backend/cuda/fp8_mma.cuh"

namespace seam::cuda::fp8_gemv_detail {

namespace {

constexpr int kStepK = 64;        // k a lane group covers per step (4 lanes x 16 bytes)
constexpr int kGroupK = 128;      // the promotion interval (and the activation / weight scale group)
constexpr int kCodeBatch = 8;     // staged values a thread turns into codes per in-place pass

__host__ __device__ constexpr int code_stride(int n_in) { return (n_in + kGroupK - 1) / kGroupK * kGroupK + 64; }
// The staged floats [M, n_in] and, over them in place, the codes [M, code_stride]: the larger of
// the two (16-aligned), then the scales [M, n_xg].
__host__ __device__ constexpr size_t x_bytes(int m, int n_in) {
  const size_t f = size_t(m) * size_t(n_in) * 4, c = size_t(m) * size_t(code_stride(n_in));
  return ((f > c ? f : c) + 15) / 16 * 16;
}
size_t mma_smem_bytes(int m, int n_in, int n_xg) { return x_bytes(m, n_in) + size_t(m) * size_t(n_xg) * 4; }

// Persistent as fp8_gemv.cu's kernel (a grid of at most one resident wave, block b computing work
// items b, b + gridDim.x, ...; the first sweep and L2 prefetches before pdl_begin; each next
// item's first sweep before the current item's epilogue), the same two blocks a SM. A work item
// is (tile, split): item i is tile i / ksplit's K slice i % ksplit (ksplit 1: the whole tile).
// U: 16-byte vectors per row per lane in flight (Fp8GemvMmaTuning::unroll); ROLLING: how they
// are reloaded (Fp8GemvMmaTuning::rolling, fp8_gemv.h).
template <typename T, int M, bool GROUPED, int U, bool ROLLING>
__global__ void __launch_bounds__(kWarps * 32, 2) fp8_gemv_mma_kernel(Fp8GemvArgs<T> a) {
  static_assert(U % 2 == 0, "a step group is one 128-wide group: two steps");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int n_in = a.n_in, stride = code_stride(n_in);
  float* xs = reinterpret_cast<float*>(smem_raw);  // [M, n_in] staged x (stage_x), then:
  uint8_t* xq = smem_raw;                          // [M, stride] its codes, written over it
  float* sx = reinterpret_cast<float*>(smem_raw + x_bytes(M, n_in));  // [M, n_xg]
  // The warps' partial sums of a tile (lanes t < 2 hold the M <= 4 columns), double-buffered by
  // the item's parity so one barrier an item suffices: a buffer is written again two items later,
  // after every thread has passed the next item's barrier, i.e. finished reading it.
  __shared__ float4 part[2][kWarps][8][2];
  __shared__ int split_last;  // split K: this block finished the tile (the last of its splits)
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int n_groups = (n_in + kGroupK - 1) / kGroupK;
  const int S = a.ksplit, n_items = a.n_tiles * S;
  // Split s of a tile takes 128-wide groups [s G / S, (s + 1) G / S), and warp w of that slice's
  // B groups [w B / 8, (w + 1) B / 8) (S = 1: the warps split the whole of K, as before).
  struct Slice {
    int g_begin, k_begin, n_steps;
  };
  auto slice_of = [&](int s) {
    const int b0 = s * n_groups / S, nb = (s + 1) * n_groups / S - b0;
    Slice sl;
    sl.g_begin = b0 + warp * nb / kWarps;
    sl.k_begin = sl.g_begin * kGroupK;
    sl.n_steps = (b0 + (warp + 1) * nb / kWarps - sl.g_begin) * (kGroupK / kStepK);
    return sl;
  };

  int item = blockIdx.x;  // < n_items: the grid is at most the item count
  int tile = item / S;
  Slice sl = slice_of(item % S);
  Fp8GemvTile cur;
  set_pair(a, tile * kPairsPerTile + g, cur);
  uint4 wv[kPairRows][U];
  // Step s of this lane's slice (zeros past the slice or K: no load).
  auto load_step = [&](const Fp8GemvTile& p, const Slice& c, int s, int q) {
    const int k = c.k_begin + s * kStepK + t * kChunk;
    return s < c.n_steps && k < n_in ? load_stream(p.w_row[q] + k / kChunk) : make_uint4(0, 0, 0, 0);
  };
  auto load_sweep = [&](const Fp8GemvTile& p, const Slice& c, int s0) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int q = 0; q < kPairRows; ++q) wv[q][u] = load_step(p, c, s0 + u, q);
  };
  load_sweep(cur, sl, 0);
  // Steps U .. a.prefetch_steps - 1 of the first item pulled into L2 meanwhile (the default 16: the
  // kPrefetchSweeps sweeps of 4 the loop was first measured with; Fp8GemvMmaTuning::prefetch).
  for (int s = U; s < a.prefetch_steps && s < sl.n_steps; ++s) {
    const int k = sl.k_begin + s * kStepK + t * kChunk;
#pragma unroll
    for (int q = 0; q < kPairRows; ++q)
      if (k < n_in) asm volatile("prefetch.global.L2 [%0];" ::"l"(cur.w_row[q] + k / kChunk));
  }
  pdl_begin();

  // ---- prologue: stage x, then its codes over it in place ----
  stage_x<T, M, GROUPED>(a, xs, sx);
  // Pass c reads the floats at positions [c B, (c + 1) B) (B = kCodeBatch * 256), then, after a
  // barrier, writes their codes at r * stride + k <= i + 3 * 192 bytes for position i < (c + 1) B:
  // below byte 4 (c + 1) B, so into floats of passes <= c, all read before that barrier.
  const int width = GROUPED ? kGroupK : n_in, total = M * n_in;
  for (int base = 0; base < total; base += kCodeBatch * kWarps * 32) {
    uint8_t code[kCodeBatch];
    int dst[kCodeBatch];
#pragma unroll
    for (int b = 0; b < kCodeBatch; ++b) {
      const int i = base + b * kWarps * 32 + int(threadIdx.x);
      dst[b] = -1;
      if (i < total) {
        const int r = i / n_in, pos = i - r * n_in, k = xs_pos(pos);  // xs_pos: an involution
        code[b] = fp8_act_code(xs[i], sx[r * a.n_xg + pos / width]);
        dst[b] = r * stride + k;
      }
    }
    __syncthreads();
#pragma unroll
    for (int b = 0; b < kCodeBatch; ++b)
      if (dst[b] >= 0) xq[dst[b]] = code[b];
  }
  __syncthreads();

  // ---- the weight stream, item after item ----
  const uint8_t* xrow = xq + (g < M ? g : 0) * stride;  // B's column g: activation row g
  int par = 0;
  for (;;) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};  // C: (row g, cols 2t, 2t + 1), (row g + 8, cols 2t, 2t + 1)
    // The weight scales of the pair's rows (GROUPED: per group, read at the promotion).
    const int o0 = cur.active[0] ? cur.rows[0] : 0, o1 = cur.active[1] ? cur.rows[1] : 0;
    for (int s0 = 0; s0 < sl.n_steps; s0 += U) {
      uint4 w_cur[kPairRows][ROLLING ? 1 : U];
      if constexpr (!ROLLING) {  // sweep: these U steps copied, the next U loaded now
#pragma unroll
        for (int q = 0; q < kPairRows; ++q)
#pragma unroll
          for (int u = 0; u < U; ++u) w_cur[q][u] = wv[q][u];
        load_sweep(cur, sl, s0 + U);
      }
#pragma unroll
      for (int h = 0; h < U / 2; ++h) {  // one 128-wide group: two steps, four mmas
        const int s = s0 + 2 * h;
        if (s >= sl.n_steps) break;  // n_steps is even: a group is whole or absent
        float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int u = 2 * h + e, k = sl.k_begin + (s + e) * kStepK + t * kChunk;
          uint4 xv = make_uint4(0, 0, 0, 0);  // zero columns past M, and zero k past K (its codes unwritten)
          if (g < M && k < n_in) xv = *reinterpret_cast<const uint4*>(xrow + k);
          uint4 w0, w1;
          if constexpr (ROLLING) {  // the register is free once read: step s + e + U goes out now
            w0 = wv[0][u];
            w1 = wv[1][u];
            wv[0][u] = load_step(cur, sl, s + e + U, 0);
            wv[1][u] = load_step(cur, sl, s + e + U, 1);
          } else {
            w0 = w_cur[0][u];
            w1 = w_cur[1][u];
          }
          const uint32_t lo[4] = {w0.x, w1.x, w0.y, w1.y};
          mma_e4m3_16832(d, lo, xv.x, xv.y);
          const uint32_t hi[4] = {w0.z, w1.z, w0.w, w1.w};
          mma_e4m3_16832(d, hi, xv.z, xv.w);
        }
        if constexpr (GROUPED) {
          const int grp = sl.g_begin + s / 2;
          const float w0 = a.ws[int64_t(o0) * a.n_xg + grp], w1 = a.ws[int64_t(o1) * a.n_xg + grp];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int col = 2 * t + (i & 1);
            if (col < M) acc[i] = fmaf(sx[col * a.n_xg + grp] * (i < 2 ? w0 : w1), d[i], acc[i]);
          }
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[i] += d[i];
        }
      }
    }
    // The next item's first sweep goes out before this item's reduction and epilogue (wv is
    // free: the last loads above were past the slice).
    const int next = item + int(gridDim.x);
    Fp8GemvTile nxt = cur;
    Slice nsl = sl;
    if (next < n_items) {
      nsl = slice_of(next % S);
      set_pair(a, next / S * kPairsPerTile + g, nxt);
      load_sweep(nxt, nsl, 0);
    }
    if (t < 2) part[par][warp][g][t] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    __syncthreads();
    // Warp p finishes pair p of the tile: lane q M + r adds row q, column r over the warps in
    // order, lane 0 gathers them and runs the epilogue.
    float v = 0.f;
    if (lane < kPairRows * M) {
      const int q = lane / M, r = lane % M;
      for (int w = 0; w < kWarps; ++w) {
        const float4 p = part[par][w][warp][r >> 1];
        const int i = 2 * q + (r & 1);  // C's register (selected, not indexed: no local memory)
        v += i == 0 ? p.x : i == 1 ? p.y : i == 2 ? p.z : p.w;
      }
    }
    bool finish = true;
    if (S > 1) {
      // This split's sums to the scratch; the tile's last block to arrive adds the S splits in
      // split order (the same sum whichever block is last) and runs the epilogue. The fences
      // order the partial stores before the ticket, and the ticket before the last block's loads.
      float* mine = a.split_part + (size_t(item) * kPairsPerTile + warp) * (kPairRows * 4);
      if (lane < kPairRows * M) mine[lane] = v;
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) {
        const int arrived = atomicAdd(a.split_ticket + tile, 1);
        split_last = arrived == S - 1;
        if (arrived == S - 1) a.split_ticket[tile] = 0;  // every split has arrived: ready for the next launch
      }
      __syncthreads();
      finish = split_last != 0;
      if (finish) {
        __threadfence();
        v = 0.f;
        if (lane < kPairRows * M)
          for (int s = 0; s < S; ++s)
            v += __ldcg(a.split_part + ((size_t(tile) * S + s) * kPairsPerTile + warp) * (kPairRows * 4) + lane);
      }
    }
    if (finish) {  // block-uniform
      float y[kPairRows][M];
#pragma unroll
      for (int q = 0; q < kPairRows; ++q)
#pragma unroll
        for (int r = 0; r < M; ++r) y[q][r] = __shfl_sync(0xffffffffu, v, q * M + r);
      if (lane == 0) {
        Fp8GemvTile mine;
        set_pair(a, tile * kPairsPerTile + warp, mine);
        store_tile<T, M, GROUPED>(a, mine, y, sx);
      }
    }
    if (next >= n_items) break;
    item = next;
    tile = next / S;
    sl = nsl;
    cur = nxt;
    par ^= 1;
  }
}

// The split-K scratch of the current device (Fp8GemvArgs::split_part / split_ticket): a fixed
// size allocated and zeroed at its first use, outside graph capture, never freed (the process
// keeps it; a few MB). Splits past its capacity run unsplit.
constexpr int kMaxSplitTiles = 16384;  // tiles with a ticket
constexpr int kMaxSplitItems = 16384;  // tiles x splits with partial sums
struct SplitScratch {
  float* part = nullptr;
  int* ticket = nullptr;
};
SplitScratch split_scratch(cudaStream_t stream) {
  static std::mutex mu;
  static std::vector<std::pair<int, SplitScratch>> per_device;
  int dev = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  const std::lock_guard<std::mutex> lock(mu);
  for (const auto& e : per_device)
    if (e.first == dev) return e.second;
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  SEAM_CUDA_CHECK(cudaStreamIsCapturing(stream, &cap));
  SEAM_CHECK(cap == cudaStreamCaptureStatusNone,
             "fp8 gemv: the split-K scratch is allocated at its first use, which must precede graph capture "
             "(SEAM_FP8_GEMV_MMA_KSPLIT; the warm-up runs the GEMV eagerly first)");
  SplitScratch sc;
  SEAM_CUDA_CHECK(cudaMalloc(&sc.part, size_t(kMaxSplitItems) * kPairsPerTile * kPairRows * 4 * sizeof(float)));
  SEAM_CUDA_CHECK(cudaMalloc(&sc.ticket, size_t(kMaxSplitTiles) * sizeof(int)));
  SEAM_CUDA_CHECK(cudaMemsetAsync(sc.ticket, 0, size_t(kMaxSplitTiles) * sizeof(int), stream));
  SEAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  per_device.emplace_back(dev, sc);
  return sc;
}

template <typename T, int M, bool GROUPED, int U, bool ROLLING>
void launch_mma_variant(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                        cudaStream_t stream, const Fp8GemvFusion& f, int ksplit, int prefetch) {
  const int64_t n_in = w.w.size(1);
  const int n_xg = GROUPED ? int(div_up(n_in, kFp8Group)) : 1;
  const size_t smem = mma_smem_bytes(M, int(n_in), n_xg);
  // The codes' row padding makes this larger than fp8_gemv_applies' staged bytes only for K < 64
  // (a few hundred bytes): the opt-in below leaves room for that.
  constexpr int kMaxSmem = int(kFp8GemvMaxStagedBytes) + 1024;
  SEAM_ASSERT(smem <= size_t(kMaxSmem), "fp8 gemv mma: staged x past its shared memory");
  const auto kernel = fp8_gemv_mma_kernel<T, M, GROUPED, U, ROLLING>;
  static std::once_flag once;
  std::call_once(once, [&] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem));
  });
  Fp8GemvArgs<T> a = make_args<T>(out, x, w, bias, accumulate, f, n_xg);
  a.prefetch_steps = prefetch;
  const int resident = resident_blocks(reinterpret_cast<const void*>(kernel), smem);
  // auto: the least split (1, 2, 4) giving every resident block two items' work. A split needs a
  // 128-wide group of K per split (below S x 8 groups some warps of a split have none: correct,
  // idle) and room in the scratch; else it halves.
  int S = ksplit;
  if (S == 0) {
    S = 1;
    while (S < 4 && int64_t(a.n_tiles) * S < 2 * int64_t(resident)) S *= 2;
  }
  const int64_t n_groups = div_up(n_in, int64_t(128));
  while (S > 1 && (n_groups < int64_t(S) || a.n_tiles > kMaxSplitTiles ||
                   int64_t(a.n_tiles) * S > kMaxSplitItems))
    S /= 2;
  a.ksplit = S;
  if (S > 1) {
    const SplitScratch sc = split_scratch(stream);
    a.split_part = sc.part;
    a.split_ticket = sc.ticket;
  }
  const int blocks = int(std::min<int64_t>(int64_t(a.n_tiles) * S, resident));
  launch_kernel(kernel, dim3(unsigned(blocks)), kWarps * 32, smem, stream, a);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, int M, bool GROUPED>
void launch_mma_typed(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                      cudaStream_t stream, const Fp8GemvFusion& f, const Fp8GemvMmaTuning& tune) {
  SEAM_ASSERT(tune.ksplit == 0 || tune.ksplit == 1 || tune.ksplit == 2 || tune.ksplit == 4,
              "fp8 gemv mma: ksplit is 1, 2, 4 or 0 (auto)");
  SEAM_ASSERT(tune.unroll == 2 || tune.unroll == 4 || tune.unroll == 8, "fp8 gemv mma: unroll is 2, 4 or 8");
  SEAM_ASSERT(tune.prefetch >= 0, "fp8 gemv mma: prefetch is a step count >= 0");
  const int ks = tune.ksplit, pf = tune.prefetch;
  if (tune.unroll == 8) return launch_mma_variant<T, M, GROUPED, 8, true>(out, x, w, bias, accumulate, stream, f, ks, pf);
  if (tune.unroll == 2)
    return tune.rolling ? launch_mma_variant<T, M, GROUPED, 2, true>(out, x, w, bias, accumulate, stream, f, ks, pf)
                        : launch_mma_variant<T, M, GROUPED, 2, false>(out, x, w, bias, accumulate, stream, f, ks, pf);
  return tune.rolling ? launch_mma_variant<T, M, GROUPED, 4, true>(out, x, w, bias, accumulate, stream, f, ks, pf)
                      : launch_mma_variant<T, M, GROUPED, 4, false>(out, x, w, bias, accumulate, stream, f, ks, pf);
}

}  // namespace

template <typename T, bool GROUPED>
void launch_mma_rows(const Tensor& out, const Tensor& x, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                     cudaStream_t stream, const Fp8GemvFusion& f, const Fp8GemvMmaTuning& tune) {
  switch (x.size(0)) {
    case 1: return launch_mma_typed<T, 1, GROUPED>(out, x, w, bias, accumulate, stream, f, tune);
    case 2: return launch_mma_typed<T, 2, GROUPED>(out, x, w, bias, accumulate, stream, f, tune);
    case 3: return launch_mma_typed<T, 3, GROUPED>(out, x, w, bias, accumulate, stream, f, tune);
    default: return launch_mma_typed<T, 4, GROUPED>(out, x, w, bias, accumulate, stream, f, tune);
  }
}

#define SEAM_FP8_GEMV_MMA_ROWS(T)                                                                                    \
  template void launch_mma_rows<T, true>(const Tensor&, const Tensor&, const Fp8Weight&, const Tensor&, bool,       \
                                         cudaStream_t, const Fp8GemvFusion&, const Fp8GemvMmaTuning&);              \
  template void launch_mma_rows<T, false>(const Tensor&, const Tensor&, const Fp8Weight&, const Tensor&, bool,      \
                                          cudaStream_t, const Fp8GemvFusion&, const Fp8GemvMmaTuning&);
SEAM_FP8_GEMV_MMA_ROWS(float)
SEAM_FP8_GEMV_MMA_ROWS(__half)
SEAM_FP8_GEMV_MMA_ROWS(__nv_bfloat16)
#undef SEAM_FP8_GEMV_MMA_ROWS

}  // namespace seam::cuda::fp8_gemv_detail
