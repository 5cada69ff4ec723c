// The sampler as radix selection, with no sort of the vocabulary.
//
// Order the tokens by (p descending, id ascending) — the CPU rule's order — and give
// each the 64-bit key (bits(p) << 32) | ~id: larger key = earlier in the order, and
// all keys differ. Every cut the rule makes (top-k, top-p, min-p, the draw itself)
// keeps a prefix of that order, so each is "the first key, from the top, at which a
// running count or running probability mass reaches a target". radix_select finds
// that key with one histogram pass per 8 key bits (usually stopping early, when the
// chosen bin holds one token). p >= 0, so the key's top bit is 0 and the first digit
// (bits 62..55) is p's exponent: the first level already spreads the tokens by binade.
//
// Determinism: probability mass is summed as 56-bit fixed point in integer
// atomics, which are exact in any order, and every float reduction has a fixed
// order. So a row's draw depends only on its logits, seed and step.
#include "backend/cuda/sample.h"

#include "backend/cuda/cuda_common.cuh"
#include "backend/sampling_rng.h"

namespace seam::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kSub = 8;      // sub-histograms (by warp), to spread shared-memory atomic contention
constexpr int kBins = 256;   // 8 key bits per pass
constexpr double kFixedOne = 72057594037927936.0;  // 2^56: probability 1 in fixed point

struct Smem {
  unsigned long long hist_w[kSub][kBins];  // fixed-point mass per bin
  unsigned int hist_c[kSub][kBins];        // tokens per bin
  unsigned long long hist_key[kBins];      // some key of the bin: the token's, when the bin holds one
  // The first radix level over all tokens (it does not depend on the target): built once, in
  // the pass that writes the probabilities, and reused by every selection.
  unsigned long long top_w[kBins];
  unsigned int top_c[kBins];
  unsigned long long top_key[kBins];
  unsigned long long red_u64[32];
  double red_f64[32];
  float red_val[32];
  int red_idx[32];
  // The bin chosen by the scan, and the mass / count of all keys above it.
  int chosen;
  unsigned long long above_w, chosen_w;
  unsigned int above_c, chosen_c;
};

__device__ __forceinline__ unsigned long long make_key(float p, int i) {
  return (static_cast<unsigned long long>(__float_as_uint(p)) << 32) | static_cast<unsigned int>(~i);
}
__device__ __forceinline__ unsigned long long fixed_mass(float p) { return __double2ull_rd(double(p) * kFixedOne); }

// ---- block reductions (fixed order: deterministic) ----
template <typename T, typename Op>
__device__ T block_reduce(T v, T* scratch, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[0];
  for (int w = 1; w < int(blockDim.x >> 5); ++w) v = op(v, scratch[w]);
  return v;
}

// Calls f(i, l[i]) for every i of this thread's share of the row; 16-byte loads, two in
// flight per thread, when the row is aligned.
template <typename F>
__device__ __forceinline__ void for_each_value(const float* l, int vocab, F f) {
  const int tid = threadIdx.x, bd = blockDim.x;
  if ((reinterpret_cast<uintptr_t>(l) & 15) == 0) {
    const int n4 = vocab >> 2;
    const float4* l4 = reinterpret_cast<const float4*>(l);
    for (int i = tid; i < n4; i += 2 * bd) {
      const float4 a = l4[i];
      const bool has_b = i + bd < n4;
      const float4 b = has_b ? l4[i + bd] : make_float4(0.f, 0.f, 0.f, 0.f);
      f(4 * i, a.x);
      f(4 * i + 1, a.y);
      f(4 * i + 2, a.z);
      f(4 * i + 3, a.w);
      if (has_b) {
        const int j = 4 * (i + bd);
        f(j, b.x);
        f(j + 1, b.y);
        f(j + 2, b.z);
        f(j + 3, b.w);
      }
    }
    for (int i = 4 * n4 + tid; i < vocab; i += bd) f(i, l[i]);
  } else {
    for (int i = tid; i < vocab; i += bd) f(i, l[i]);
  }
}

// l[i] = g(i, l[i]) over the row, like for_each_value.
template <typename G>
__device__ __forceinline__ void map_values(float* l, int vocab, G g) {
  const int tid = threadIdx.x, bd = blockDim.x;
  if ((reinterpret_cast<uintptr_t>(l) & 15) == 0) {
    const int n4 = vocab >> 2;
    float4* l4 = reinterpret_cast<float4*>(l);
    for (int i = tid; i < n4; i += 2 * bd) {
      float4 a = l4[i];
      const bool has_b = i + bd < n4;
      float4 b = has_b ? l4[i + bd] : make_float4(0.f, 0.f, 0.f, 0.f);
      a = make_float4(g(4 * i, a.x), g(4 * i + 1, a.y), g(4 * i + 2, a.z), g(4 * i + 3, a.w));
      l4[i] = a;
      if (has_b) {
        const int j = 4 * (i + bd);
        l4[i + bd] = make_float4(g(j, b.x), g(j + 1, b.y), g(j + 2, b.z), g(j + 3, b.w));
      }
    }
    for (int i = 4 * n4 + tid; i < vocab; i += bd) l[i] = g(i, l[i]);
  } else {
    for (int i = tid; i < vocab; i += bd) l[i] = g(i, l[i]);
  }
}

// Radix digit of a level: bits 62..55 (p's exponent: the key's top bit is always 0), then 8
// bits at a time; the last digit (bits 7..0) overlaps bit 7, already fixed by the prefix.
__device__ __forceinline__ int digit_shift(int level) { return level < 7 ? 55 - 8 * level : 0; }

// Histogram of the next digit of the keys matching (prefix, mask), added into the
// warp's sub-histogram. hist_key gets some key of each bin by a plain store: when the bin
// holds one token (the only case it is read) there is exactly one writer.
__device__ __forceinline__ void add_to_histogram(Smem& sm, int sub, unsigned long long key, float p, int shift) {
  const int bin = int((key >> shift) & 255);
  atomicAdd(&sm.hist_c[sub][bin], 1u);
  const unsigned long long w = fixed_mass(p);
  if (w) atomicAdd(&sm.hist_w[sub][bin], w);
  sm.hist_key[bin] = key;
}

__device__ __forceinline__ void clear_histograms(Smem& sm) {
  for (int i = threadIdx.x; i < kSub * kBins; i += blockDim.x) {
    (&sm.hist_w[0][0])[i] = 0;
    (&sm.hist_c[0][0])[i] = 0;
  }
}
__device__ __forceinline__ void fold_histograms(Smem& sm) {
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
    for (int s = 1; s < kSub; ++s) {
      sm.hist_w[0][b] += sm.hist_w[s][b];
      sm.hist_c[0][b] += sm.hist_c[s][b];
    }
  }
}

struct Selected {
  unsigned long long key;    // the token's key
  unsigned long long cum_w;  // mass of every key >= key (inclusive)
  bool found;                // false: the target exceeds the whole mass
};

// The first key (from the largest) whose inclusive running count (by_count) or running
// mass reaches `target`. Every thread returns the same answer.
__device__ Selected radix_select(const float* p, int vocab, bool by_count, unsigned long long target, Smem& sm) {
  unsigned long long prefix = 0, mask = 0, acc_w = 0;
  unsigned int acc_c = 0;
  const int tid = threadIdx.x, lane = tid & 31, sub = (tid >> 5) % kSub;
  for (int level = 0; level < 8; ++level) {
    const int shift = digit_shift(level);
    if (level == 0) {  // over all tokens: the histogram built with the probabilities
      for (int b = tid; b < kBins; b += blockDim.x) {
        sm.hist_w[0][b] = sm.top_w[b];
        sm.hist_c[0][b] = sm.top_c[b];
        sm.hist_key[b] = sm.top_key[b];
      }
      __syncthreads();
    } else {
      clear_histograms(sm);
      __syncthreads();
      for_each_value(p, vocab, [&](int i, float pi) {
        const unsigned long long key = make_key(pi, i);
        if ((key & mask) == prefix) add_to_histogram(sm, sub, key, pi, shift);
      });
      __syncthreads();
      fold_histograms(sm);
      __syncthreads();
    }
    if (tid < 32) {
      // Lane l owns bins 255-8l .. 248-8l (lane 0 the largest keys).
      unsigned long long w8 = 0;
      unsigned int c8 = 0;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int b = 255 - 8 * lane - i;
        w8 += sm.hist_w[0][b];
        c8 += sm.hist_c[0][b];
      }
      unsigned long long w_incl = w8;
      unsigned int c_incl = c8;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned long long wu = __shfl_up_sync(0xffffffffu, w_incl, o);
        const unsigned int cu = __shfl_up_sync(0xffffffffu, c_incl, o);
        if (lane >= o) {
          w_incl += wu;
          c_incl += cu;
        }
      }
      const unsigned long long crit = by_count ? acc_c + c_incl : acc_w + w_incl;
      const unsigned int ballot = __ballot_sync(0xffffffffu, crit >= target);
      if (ballot == 0) {
        if (lane == 0) sm.chosen = -1;
      } else if (lane == __ffs(ballot) - 1) {
        unsigned long long run_w = acc_w + w_incl - w8;
        unsigned int run_c = acc_c + c_incl - c8;
        int chosen = 255 - 8 * lane - 7;
        for (int i = 0; i < 8; ++i) {
          const int b = 255 - 8 * lane - i;
          const unsigned long long bw = sm.hist_w[0][b];
          const unsigned int bc = sm.hist_c[0][b];
          if ((by_count ? run_c + bc : run_w + bw) >= target) {
            chosen = b;
            break;
          }
          run_w += bw;
          run_c += bc;
        }
        sm.chosen = chosen;
        sm.above_w = run_w;
        sm.above_c = run_c;
        sm.chosen_w = sm.hist_w[0][chosen];
        sm.chosen_c = sm.hist_c[0][chosen];
      }
    }
    __syncthreads();
    const int chosen = sm.chosen;
    if (chosen < 0) return {0, 0, false};
    acc_w = sm.above_w;
    acc_c = sm.above_c;
    const unsigned int chosen_c = sm.chosen_c;
    const unsigned long long chosen_w = sm.chosen_w, chosen_key = sm.hist_key[chosen];
    __syncthreads();  // everyone has read the shared results before the next pass clears them
    if (chosen_c == 1 || level == 7) return {chosen_key, acc_w + chosen_w, true};
    prefix |= static_cast<unsigned long long>(chosen) << shift;
    mask |= 255ull << shift;
  }
  return {0, 0, false};  // not reached
}

__global__ void __launch_bounds__(kThreads) sample_kernel(int32_t* out_ids, float* logits, int64_t stride, int vocab,
                                                          const float* temperature, const int32_t* top_k,
                                                          const float* top_p, const float* min_p, const int64_t* seed,
                                                          const int32_t* step) {
  pdl_begin();
  __shared__ Smem sm;
  const int r = blockIdx.x, tid = threadIdx.x, sub = (tid >> 5) % kSub;
  float* l = logits + r * stride;

  // 1. argmax, ties to the lowest id.
  float best_v = -INFINITY;
  int best_i = vocab;  // no token yet (all -inf or NaN): fall back to 0 below
  for_each_value(l, vocab, [&](int i, float v) {
    if (v > best_v || (v == best_v && i < best_i)) {
      best_v = v;
      best_i = i;
    }
  });
  {
    const int lane = tid & 31, warp = tid >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, best_v, o);
      const int oi = __shfl_xor_sync(0xffffffffu, best_i, o);
      if (ov > best_v || (ov == best_v && oi < best_i)) {
        best_v = ov;
        best_i = oi;
      }
    }
    if (lane == 0) {
      sm.red_val[warp] = best_v;
      sm.red_idx[warp] = best_i;
    }
    __syncthreads();
    best_v = sm.red_val[0];
    best_i = sm.red_idx[0];
    for (int w = 1; w < int(blockDim.x >> 5); ++w) {
      if (sm.red_val[w] > best_v || (sm.red_val[w] == best_v && sm.red_idx[w] < best_i)) {
        best_v = sm.red_val[w];
        best_i = sm.red_idx[w];
      }
    }
    if (best_i >= vocab) best_i = 0;
  }
  const float temp = temperature[r];
  const int k = top_k[r];
  if (temp <= 0.f || k == 1) {
    if (tid == 0) out_ids[r] = best_i;
    return;
  }

  // 2. p = softmax(logits / temperature), written over the logits row; with it the total
  // fixed-point mass, the largest key and the first radix level's histogram.
  const float max_logit = best_v;
  double total = 0.0;
  map_values(l, vocab, [&](int, float v) {
    const float e = expf((v - max_logit) / temp);
    total += e;
    return e;
  });
  total = block_reduce<double>(total, sm.red_f64, [](double a, double b) { return a + b; });
  clear_histograms(sm);
  __syncthreads();
  unsigned long long mass = 0, top_key = 0;
  map_values(l, vocab, [&](int i, float e) {
    const float p = float(double(e) / total);
    const unsigned long long key = make_key(p, i);
    mass += fixed_mass(p);
    top_key = max(top_key, key);
    add_to_histogram(sm, sub, key, p, digit_shift(0));
    return p;
  });
  mass = block_reduce<unsigned long long>(mass, sm.red_u64,
                                          [](unsigned long long a, unsigned long long b) { return a + b; });
  top_key = block_reduce<unsigned long long>(top_key, sm.red_u64,
                                             [](unsigned long long a, unsigned long long b) { return max(a, b); });
  fold_histograms(sm);
  __syncthreads();
  for (int b = tid; b < kBins; b += blockDim.x) {
    sm.top_w[b] = sm.hist_w[0][b];
    sm.top_c[b] = sm.hist_c[0][b];
    sm.top_key[b] = sm.hist_key[b];
  }
  __syncthreads();
  const float p_max = __uint_as_float(unsigned(top_key >> 32));

  // The kept set is always {key >= keep_key}, of mass keep_w.
  unsigned long long keep_key = 0, keep_w = mass;
  // 3. top-k.
  if (k > 0 && k < vocab) {
    const Selected s = radix_select(l, vocab, true, unsigned(k), sm);
    keep_key = s.key;
    keep_w = s.cum_w;
  }
  // 4. top-p: the shortest prefix whose mass reaches top_p of the kept mass (at least one token).
  const float tp = top_p[r];
  if (tp < 1.f) {
    const double t = ceil(double(tp) * double(keep_w));
    const Selected s = radix_select(l, vocab, false, t < 1.0 ? 1ull : (unsigned long long)t, sm);
    if (s.found && s.key > keep_key) {
      keep_key = s.key;
      keep_w = s.cum_w;
    }
  }
  // 5. min-p: keep p >= min_p * p_max inside the prefix, at least the top token.
  const float mp = min_p[r];
  if (mp > 0.f) {
    const float threshold = mp * p_max;
    unsigned long long k_min = static_cast<unsigned long long>(__float_as_uint(threshold)) << 32;
    if (k_min > top_key) k_min = top_key;
    if (k_min > keep_key) {
      keep_key = k_min;
      unsigned long long w = 0;
      for_each_value(l, vocab, [&](int i, float p) {
        if (make_key(p, i) >= keep_key) w += fixed_mass(p);
      });
      keep_w = block_reduce<unsigned long long>(w, sm.red_u64,
                                                [](unsigned long long a, unsigned long long b) { return a + b; });
    }
  }
  // 6. the draw: the first kept token whose running mass exceeds u * kept mass.
  const double u = sampling_uniform(uint64_t(seed[r]), uint32_t(step[r]));
  const unsigned long long target = (unsigned long long)(u * double(keep_w)) + 1ull;
  const Selected s = radix_select(l, vocab, false, target, sm);
  if (s.found && s.key >= keep_key) {
    if (tid == 0) out_ids[r] = int32_t(~unsigned(s.key & 0xffffffffu));
    return;
  }
  // Rounding left the target unmet inside the kept set: the last kept token (the CPU rule's
  // order[n_keep - 1]), i.e. the smallest key >= keep_key (keep_key may be a min-p bound).
  unsigned long long lo = ~0ull;
  for_each_value(l, vocab, [&](int i, float p) {
    const unsigned long long kk = make_key(p, i);
    if (kk >= keep_key) lo = min(lo, kk);
  });
  lo = block_reduce<unsigned long long>(lo, sm.red_u64,
                                        [](unsigned long long a, unsigned long long b) { return min(a, b); });
  if (tid == 0) out_ids[r] = int32_t(~unsigned(lo & 0xffffffffu));
}

}  // namespace

void launch_sample(const Tensor& out_ids, const Tensor& logits, const SamplingBatch& s, cudaStream_t stream) {
  if (s.n == 0) return;
  launch_kernel(sample_kernel, unsigned(s.n), kThreads, 0, stream, out_ids.ptr<int32_t>(), logits.ptr<float>(),
                logits.stride[0], int(logits.size(1)), s.temperature.ptr<float>(), s.top_k.ptr<int32_t>(),
                s.top_p.ptr<float>(), s.min_p.ptr<float>(), s.seed.ptr<int64_t>(), s.step.ptr<int32_t>());
  SEAM_CUDA_CHECK_LAUNCH();
}

}  // namespace seam::cuda
