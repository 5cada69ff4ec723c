// The FP8 GEMM on Hopper's tensor cores with the scales in its epilogue (fp8_gemm_wgmma.h).
//
// A block computes a BM x BN tile of out (BM = 64 or 128 rows: one or two consumer warpgroups of
// m64; BN = 32, 64 or 128 outputs: the wgmma N). K runs in blocks of 128: one 128-byte SW128
// line per row holds a block's 128 E4M3 codes, so a stage is [BM lines of x codes][BN lines of
// w codes] (wgmma.cuh: chunk c of line r at c ^ (r % 8); both operands K-major, as FP8 wgmma
// requires), and a K block is 4 wgmma k32 steps 32 bytes apart. Stages travel through a
// cp.async ring (kStages deep); every thread issues its share of each stage's copies and the
// block meets at one barrier per K block (not warp-specialised, as attention_prefill_wgmma.cu).
// Rows past n and outputs past N are zero-filled in shared memory and never stored.
//
// Promotion (DeepGEMM's): the 4 wgmmas of K block kb write a fresh partial P (scale-d off for the
// first), which the warpgroup waits for and adds into float32 registers: acc += s * P with
// s = xs(i, kb) * ws(o, kb) for block128 weights (the scales of the block ride in the stage,
// [BM] + [BN] floats), acc += P otherwise. The epilogue multiplies the latter by xs(i) * ws(o),
// adds the bias and the accumulate, and rounds once to out's dtype: fp8_gemm.cu's arithmetic.
//
// Tiles (fp8_gemm_wgmma_tile): 128 x 128 when that fills every multiprocessor (prefill);
// otherwise 64 rows and the widest BN whose tiles still cover every multiprocessor, down to 32:
// at decode batch sizes (n <= 64) the product streams the weight once, and enough blocks must
// pull on it to reach the memory bandwidth. The grid's x is the row tile (fastest), so the
// blocks resident together share a few weight tiles and all of x: a weight larger than L2
// (gate_up at 4,096 tokens) is read from memory once, x from L2.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/fp8_gemm_wgmma.h"
#include "backend/cuda/fp8_gemm_wgmma_common.cuh"
#include "backend/cuda/sm90a_device.h"
#include "backend/cuda/wgmma.cuh"

namespace seam::cuda {

namespace {

using fp8_wgmma_detail::cp_async_4;
using fp8_wgmma_detail::store_pair;

constexpr int kBlockK = 128;             // K per stage: one SW128 line of E4M3 codes per row
constexpr int kLine = 128;               // bytes of one swizzled line
constexpr int kSmemBudget = 200 * 1024;  // code stages of a block (4 to 8 stages)

template <int BM, int BN>
struct Tiling {
  static_assert(BM == 64 || BM == 128, "one or two m64 warpgroups");
  static_assert(BN == 32 || BN == 64 || BN == 128, "wgmma N of the e4m3 forms in wgmma.cuh");
  static constexpr int kWarpgroups = BM / 64;
  static constexpr int kThreads = kWarpgroups * 128;
  static constexpr int kABytes = BM * kLine;  // x codes of a stage: BM lines (1024-byte atoms)
  static constexpr int kBBytes = BN * kLine;  // w codes of a stage: BN lines
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kStages = std::min(8, std::max(4, kSmemBudget / kStageBytes));
  // Code stages, then the scales of each stage (block128: [kStages][BM] xs, [kStages][BN] ws);
  // +1024 to align the start to a swizzle atom (the descriptors' base offset is then 0).
  static constexpr size_t kSmemBytes = size_t(kStages) * kStageBytes + size_t(kStages) * (BM + BN) * 4 + 1024;
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "stages start on swizzle atoms");
  static_assert(BM * 8 % kThreads == 0 && BN * 8 % kThreads == 0, "16-byte copies split evenly");
  static_assert(kSmemBytes <= 227 * 1024, "within a block's shared memory");
};

// xq [n_rows, n_in] codes; xs [n_groups, n_rows] (BLOCK: n_groups = n_in / 128); wq [n_out, n_in];
// ws: BLOCK [n_out, n_in / 128], else [n_out] (ws_step 1) or [1] (ws_step 0).
template <typename T, int BM, int BN, bool BLOCK, bool OVERLAP>
__global__ void __launch_bounds__(Tiling<BM, BN>::kThreads, 1)
    fp8_gemm_wgmma_kernel(T* out, int64_t out_stride, const uint8_t* xq, const float* xs, const uint8_t* wq,
                          const float* ws, int ws_step, const T* bias, int n_rows, int n_out, int n_in,
                          bool accumulate) {
#if defined(SEAM_WGMMA_ENABLED)
  using Tl = Tiling<BM, BN>;
  constexpr int S = Tl::kStages;
  pdl_begin();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024u - (flash::smem_addr(smem_raw) & 1023u)) & 1023u);
  const uint32_t smem_base = flash::smem_addr(smem);
  float* s_xs = reinterpret_cast<float*>(smem + S * Tl::kStageBytes);  // [S][BM] (BLOCK)
  float* s_ws = s_xs + S * BM;                                         // [S][BN] (BLOCK)
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, wg_warp = warp & 3;
  const int64_t m0 = int64_t(blockIdx.x) * BM, n0 = int64_t(blockIdx.y) * BN;
  const int n_kb = n_in / kBlockK;

  // Copies K block kb (codes and, for BLOCK, its scales) into stage kb % S. Not committed.
  auto load_stage = [&](int kb) {
    const int st = kb % S;
    unsigned char* a = smem + st * Tl::kStageBytes;
    unsigned char* b = a + Tl::kABytes;
    const int64_t k0 = int64_t(kb) * kBlockK;
#pragma unroll
    for (int i = 0; i < BM * 8 / Tl::kThreads; ++i) {
      const int c = tid + i * Tl::kThreads, r = c >> 3, chunk = c & 7;
      const int64_t row = m0 + r;
      const bool valid = row < n_rows;
      flash::cp_async_16(a + r * kLine + ((chunk ^ (r & 7)) << 4), valid ? xq + row * n_in + k0 + chunk * 16 : xq,
                         valid);
    }
#pragma unroll
    for (int i = 0; i < BN * 8 / Tl::kThreads; ++i) {
      const int c = tid + i * Tl::kThreads, r = c >> 3, chunk = c & 7;
      const int64_t o = n0 + r;
      const bool valid = o < n_out;
      flash::cp_async_16(b + r * kLine + ((chunk ^ (r & 7)) << 4), valid ? wq + o * n_in + k0 + chunk * 16 : wq, valid);
    }
    if constexpr (BLOCK) {
      for (int c = tid; c < BM + BN; c += Tl::kThreads) {
        if (c < BM) {
          const int64_t row = m0 + c;
          const bool valid = row < n_rows;
          cp_async_4(s_xs + st * BM + c, valid ? xs + int64_t(kb) * n_rows + row : xs, valid);
        } else {
          const int64_t o = n0 + (c - BM);
          const bool valid = o < n_out;
          cp_async_4(s_ws + st * BN + (c - BM), valid ? ws + o * n_kb + kb : ws, valid);
        }
      }
    }
  };

  // Not BLOCK: the epilogue's scales (xs of the tile's rows, ws of its outputs) ride in K block 0's
  // group into the scale area (unused otherwise), so the epilogue waits on no global load for them.
  auto load_epilogue_scales = [&] {
    if constexpr (!BLOCK) {
      for (int c = tid; c < BM + BN; c += Tl::kThreads) {
        if (c < BM) {
          const int64_t row = m0 + c;
          const bool valid = row < n_rows;
          cp_async_4(s_xs + c, valid ? xs + row : xs, valid);
        } else {
          const int64_t o = n0 + (c - BM);
          const bool valid = o < n_out;
          cp_async_4(s_ws + (c - BM), valid ? ws + o * ws_step : ws, valid);
        }
      }
    }
  };

  float acc[BN / 8][4], part0[BN / 8][4], part1[BN / 8][4];
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  // This thread's accumulator entries: tile rows r_lo (e 0, 1) and r_lo + 8 (e 2, 3), tile
  // columns 8 j + c0 (e 0, 2) and + 1 (e 1, 3) (wgmma.cuh).
  const int r_lo = wg * 64 + wg_warp * 16 + (lane >> 2), c0 = 2 * (lane & 3);
  const uint32_t a_off = wg * 64 * kLine;  // the warpgroup's 64 rows: 8 atoms in
  // Issues K block kb's 4 wgmmas into p (a fresh partial: scale-d off for the first), committed
  // as one group.
  auto issue = [&](int kb, float(&p)[BN / 8][4]) {
    const uint32_t stage = smem_base + (kb % S) * Tl::kStageBytes;
    const uint64_t desc_a = wgmma::desc_sw128(stage + a_off, 16, 1024);
    const uint64_t desc_b = wgmma::desc_sw128(stage + Tl::kABytes, 16, 1024);
    wgmma::fence();  // p was read by an earlier promotion
#pragma unroll
    for (int ks = 0; ks < kBlockK / 32; ++ks)
      wgmma::m64k32_e4m3_ss<BN>(p, wgmma::desc_advance(desc_a, ks * 32), wgmma::desc_advance(desc_b, ks * 32), ks > 0);
    wgmma::commit();
  };
  // Adds K block kb's landed partial p into acc (BLOCK: scaled by its stage's scales).
  auto promote = [&](int kb, const float(&p)[BN / 8][4]) {
    if constexpr (BLOCK) {
      const int st = kb % S;
      const float xa = s_xs[st * BM + r_lo], xb = s_xs[st * BM + r_lo + 8];
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const float w0 = s_ws[st * BN + 8 * j + c0], w1 = s_ws[st * BN + 8 * j + c0 + 1];
        acc[j][0] = fmaf(xa * w0, p[j][0], acc[j][0]);
        acc[j][1] = fmaf(xa * w1, p[j][1], acc[j][1]);
        acc[j][2] = fmaf(xb * w0, p[j][2], acc[j][2]);
        acc[j][3] = fmaf(xb * w1, p[j][3], acc[j][3]);
      }
    } else {
      (void)kb;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] += p[j][e];
    }
  };

  if constexpr (!OVERLAP) {
    // Serial: K block kb's wgmmas, wait, promote. Blocks kb + 1 .. kb + S - 2 are in flight.
    // One commit group per K block (empty past the last), so the wait count is constant.
    load_epilogue_scales();
#pragma unroll
    for (int kb = 0; kb < S - 1; ++kb) {
      if (kb < n_kb) load_stage(kb);
      flash::cp_async_commit();
    }
    for (int kb = 0; kb < n_kb; ++kb) {
      // K block kb has landed (this thread's copies) and is visible to the async proxy; after
      // the barrier everyone's is, and every warpgroup finished K block kb - 1, whose stage the
      // refill overwrites.
      flash::cp_async_wait<S - 2>();
      wgmma::fence_proxy_async();
      __syncthreads();
      if (kb + S - 1 < n_kb) load_stage(kb + S - 1);
      flash::cp_async_commit();
      issue(kb, part0);
      wgmma::wait<0>();
      wgmma::fence_operands(part0);
      promote(kb, part0);
    }
  } else {
    // Overlapped: block kb + 1's wgmmas are issued before block kb's partial (the other register
    // set) is promoted, so the tensor cores work during that promotion. A block's stage is read
    // until its wgmmas retire, so the refill before block kb takes the stage of kb - 2 (retired
    // by then in either slot of the pair): blocks kb + 1 .. kb + S - 3 are in flight, kb + S - 2
    // is issued.
    load_epilogue_scales();
#pragma unroll
    for (int kb = 0; kb < S - 2; ++kb) {
      if (kb < n_kb) load_stage(kb);
      flash::cp_async_commit();
    }
    // Block kb has landed and is visible; after the barrier every warpgroup has waited for block
    // kb - 2's wgmmas and promoted it (iteration kb - 1), so its stage is free for the refill.
    auto begin = [&](int kb) {
      flash::cp_async_wait<S - 3>();
      wgmma::fence_proxy_async();
      __syncthreads();
      if (kb + S - 2 < n_kb) load_stage(kb + S - 2);
      flash::cp_async_commit();
    };
    // Waits until at most N groups are in flight (the one of block kb has landed) and promotes it.
    auto retire1 = [&](int kb, float(&p)[BN / 8][4]) {
      wgmma::wait<1>();
      wgmma::fence_operands(p);
      promote(kb, p);
    };
    auto retire0 = [&](int kb, float(&p)[BN / 8][4]) {
      wgmma::wait<0>();
      wgmma::fence_operands(p);
      promote(kb, p);
    };
    // Two K blocks an iteration: block kb + 1's wgmmas run while kb's partial is promoted; kb + 1's
    // promotion is exposed. Nothing is in flight across the back edge or a branch merge: with
    // partial sums in flight there NVVM copies them and ptxas serialises every wgmma (C7514).
    for (int kb = 0; kb < n_kb; kb += 2) {
      begin(kb);
      issue(kb, part0);
      if (kb + 1 < n_kb) {
        begin(kb + 1);
        issue(kb + 1, part1);
        retire1(kb, part0);
        retire0(kb + 1, part1);
      } else {
        retire0(kb, part0);
      }
    }
  }
  flash::cp_async_wait<0>();  // no copy outlives the block (the trailing groups are empty)

  // Pairs of adjacent outputs (8 j + c0 is even, and N % 8 == 0 keeps o + 1 < N with o): one
  // aligned store each where the row stride and out allow it.
  const bool paired = out_stride % 2 == 0 && reinterpret_cast<uintptr_t>(out) % (2 * sizeof(T)) == 0;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = m0 + r_lo + 8 * h;
    if (row >= n_rows) continue;
    const float x_s = BLOCK ? 1.f : s_xs[r_lo + 8 * h];
    T* dst_row = out + row * out_stride;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      const int c = 8 * j + c0;
      const int64_t o = n0 + c;
      if (o >= n_out) continue;
      float y0 = acc[j][2 * h], y1 = acc[j][2 * h + 1];
      if constexpr (!BLOCK) {
        y0 = (x_s * s_ws[c]) * y0;
        y1 = (x_s * s_ws[c + 1]) * y1;
      }
      if (bias) {
        y0 += to_float(bias[o]);
        y1 += to_float(bias[o + 1]);
      }
      store_pair(dst_row + o, y0, y1, accumulate, paired);
    }
  }
#else
  // Built without sm_90a: fp8_gemm_wgmma_applies is false, the kernel never launched.
  __trap();
#endif
}

template <typename T, int BM, int BN, bool BLOCK, bool OVERLAP>
void launch_tile(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                 const Tensor& bias, bool accumulate, cudaStream_t stream) {
  using Tl = Tiling<BM, BN>;
  auto* kernel = fp8_gemm_wgmma_kernel<T, BM, BN, BLOCK, OVERLAP>;
  once_per_device(reinterpret_cast<const void*>(kernel), [kernel] {
    SEAM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tl::kSmemBytes)));
  });
  const int64_t n = out.size(0), n_out = w.w.size(0), n_in = w.w.size(1);
  const dim3 grid(unsigned(div_up(n, BM)), unsigned(div_up(n_out, BN)));
  const int ws_step = w.w_scheme == Fp8WeightScheme::per_tensor ? 0 : 1;
  launch_kernel(
      kernel, grid, Tl::kThreads, Tl::kSmemBytes, stream, out.ptr<T>(), out.stride[0], codes.ptr<const uint8_t>(),
      act_scales.ptr<const float>(), w.w.ptr<const uint8_t>(), w.w_scale.ptr<const float>(), ws_step,
      bias.defined() ? bias.ptr<const T>() : static_cast<const T*>(nullptr), int(n), int(n_out), int(n_in), accumulate);
  SEAM_CUDA_CHECK_LAUNCH();
}

template <typename T, bool BLOCK, bool OVERLAP>
void launch_tiled(Fp8WgmmaTile tile, const Tensor& out, const Tensor& codes, const Tensor& act_scales,
                  const Fp8Weight& w, const Tensor& bias, bool accumulate, cudaStream_t stream) {
  if (tile.rows == 128)
    return launch_tile<T, 128, 128, BLOCK, OVERLAP>(out, codes, act_scales, w, bias, accumulate, stream);
  if (tile.cols == 128)
    return launch_tile<T, 64, 128, BLOCK, OVERLAP>(out, codes, act_scales, w, bias, accumulate, stream);
  if (tile.cols == 64)
    return launch_tile<T, 64, 64, BLOCK, OVERLAP>(out, codes, act_scales, w, bias, accumulate, stream);
  launch_tile<T, 64, 32, BLOCK, OVERLAP>(out, codes, act_scales, w, bias, accumulate, stream);
}

template <typename T>
void launch_typed(Fp8WgmmaTile tile, bool block, bool overlap, const Tensor& out, const Tensor& codes,
                  const Tensor& act_scales, const Fp8Weight& w, const Tensor& bias, bool accumulate,
                  cudaStream_t stream) {
  if (block && overlap) return launch_tiled<T, true, true>(tile, out, codes, act_scales, w, bias, accumulate, stream);
  if (block) return launch_tiled<T, true, false>(tile, out, codes, act_scales, w, bias, accumulate, stream);
  if (overlap) return launch_tiled<T, false, true>(tile, out, codes, act_scales, w, bias, accumulate, stream);
  launch_tiled<T, false, false>(tile, out, codes, act_scales, w, bias, accumulate, stream);
}

}  // namespace

Fp8WgmmaTile fp8_gemm_wgmma_tile(int64_t n, int64_t n_out, int n_sms) {
  auto tiles = [&](int bm, int bn) { return div_up(n, int64_t(bm)) * div_up(n_out, int64_t(bn)); };
  if (n > 64 && tiles(128, 128) >= n_sms) return {128, 128};
  for (int bn : {128, 64})
    if (tiles(64, bn) >= n_sms) return {64, bn};
  return {64, 32};
}

bool fp8_gemm_wgmma_applies(const Tensor& out, const Tensor& codes, const Fp8Weight& w) {
#if defined(SEAM_CUDA_SM90A)
  static const bool device_ok = current_device_is_sm90();  // sm_90a code runs on 9.0 only
  if (!device_ok || !w.w.defined() || w.w.ndim != 2 || !w.w.contiguous() || !codes.defined() || codes.ndim != 2 ||
      out.ndim != 2)
    return false;
  const int64_t n = codes.size(0), n_out = w.w.size(0), n_in = w.w.size(1);
  const bool float_out = out.dtype == DType::f32 || out.dtype == DType::f16 || out.dtype == DType::bf16;
  // Grid: y = output tiles of 32 at most 65,535; the kernel's counts are int.
  return float_out && n_in >= kBlockK && n_in % kBlockK == 0 && n_out % 8 == 0 && n_out / 32 <= 65535 &&
         n <= INT_MAX / 2 && n_in <= INT_MAX && codes.size(1) == n_in && codes.stride[0] == n_in &&
         codes.stride[1] == 1 && out.size(0) == n && out.size(1) == n_out && out.stride[1] == 1 &&
         aligned16(codes.data) && aligned16(w.w.data);
#else
  (void)out;
  (void)codes;
  (void)w;
  return false;
#endif
}

void launch_fp8_gemm_wgmma(const Tensor& out, const Tensor& codes, const Tensor& act_scales, const Fp8Weight& w,
                           const Tensor& bias, bool accumulate, cudaStream_t stream, int overlap) {
  SEAM_CHECK(fp8_gemm_wgmma_applies(out, codes, w), "fp8 gemm (wgmma): not available for out ", out.shape_str(),
             " codes ", codes.shape_str(), " w ", w.w.shape_str(),
             " (needs an sm_90a build, a CC 9.0 GPU, K % 128 == 0, N % 8 == 0, contiguous aligned codes)");
  const int64_t n = out.size(0), n_out = w.w.size(0);
  if (n == 0) return;
  const bool block = w.w_scheme == Fp8WeightScheme::block128;
  SEAM_CHECK(act_scales.numel() == (block ? w.w.size(1) / kFp8Group : 1) * n, "fp8 gemm (wgmma): act_scales ",
             act_scales.shape_str(), " do not match ", n, " rows of the ", fp8_weight_scheme_name(w.w_scheme),
             " scheme");
  const Fp8WgmmaTile tile = fp8_gemm_wgmma_tile(n, n_out, current_device_sms());
  // SEAM_FP8_WGMMA_OVERLAP: 1 (default) overlaps each K block's wgmmas with the previous
  // block's promotion, 0 runs them in turn (a diagnostic A/B of the two main loops).
  static const int overlap_switch = env_choice("SEAM_FP8_WGMMA_OVERLAP", 1, {0, 1});
  SEAM_CHECK(overlap >= -1 && overlap <= 1, "fp8 gemm (wgmma): overlap must be -1, 0 or 1, got ", overlap);
  const bool overlapped = (overlap < 0 ? overlap_switch : overlap) == 1;
  SEAM_DISPATCH_FLOAT_TYPES(out.dtype, T, "fp8 gemm (wgmma)", [&] {
    launch_typed<T>(tile, block, overlapped, out, codes, act_scales, w, bias, accumulate, stream);
  });
}

}  // namespace seam::cuda
