// Warp-level building blocks of the tensor-core attention kernels (prefill and
// decode): mma.sync m16n8k16 with fp32 accumulation, ldmatrix from swizzled
// shared-memory K/V tiles, cp.async gathers of paged KV rows.
//
// Fragment layout (PTX ISA, m16n8k16, g = lane / 4, t = lane % 4):
//   A (16x16, row-major): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B (16x8, "col"):      b0 = (k 2t..2t+1, n g), b1 = (k 2t+8.., n g)
//   C (16x8):             c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// A K row tile [keys][D] gives B of S = Q K^T with plain ldmatrix; a V tile gives B of
// O = P V with ldmatrix.trans; the C fragments of S are the A fragments of P.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

namespace seam::cuda::flash {

__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                          __nv_bfloat16) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, __half) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// 16-byte global -> shared copy; when !valid the destination is zero-filled (src not read).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Two floats as one packed pair of T (the low half is `lo`).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Element offset of (row, 16-byte chunk) in a [rows][D] tile whose chunks are XOR-swizzled
// so the 8 rows one ldmatrix matrix reads hit 8 different 16-byte bank groups. D a multiple
// of 64 (rows of a multiple of 128 bytes): chunk ^ (row % 8). D = 96 (12 chunks, rows of 192
// bytes: odd rows start half-way through the 128-byte bank line): chunk ^ ((row / 2) % 4),
// which keeps a chunk inside its aligned group of 4 (so inside the row), and rows r, r + 1
// differ by the line half, rows r, r + 2, r + 4, r + 6 by the XOR. The pattern repeats every 8
// rows in both cases, so tiles may start at any multiple of 8 rows.
template <int D>
__device__ __forceinline__ int tile_offset(int row, int chunk) {
  static_assert(D % 64 == 0 || D == 96, "tile_offset: head dims 64, 96, 128, 256");
  if constexpr (D % 64 == 0)
    return row * D + ((chunk ^ (row & 7)) << 3);
  else
    return row * D + ((chunk ^ ((row >> 1) & 3)) << 3);
}

// Gathers keys [key0, key0 + ROWS) of one KV head into a K and a V tile (cp.async, one
// group not committed here). slot_of(row) gives the KV slot of key key0 + row; it is
// called by every thread for every chunk (it may shuffle), and the slots were fetched
// a tile ahead, so no page-table load latency sits in front of the copies. Keys at or
// past `key_end` are zero-filled: their scores are masked, and zero V rows keep
// 0 * garbage out of the output. `tid`/`n_threads` split the work.
template <typename T, int D, int ROWS, typename SlotOf>
__device__ __forceinline__ void load_kv_tile(T* k_tile, T* v_tile, const T* k_cache, const T* v_cache,
                                             SlotOf slot_of, int key0, int key_end, int n_kv_heads, int kvh,
                                             int tid, int n_threads) {
  constexpr int kChunks = D / 8;
#pragma unroll 4
  for (int c = tid; c < ROWS * kChunks; c += n_threads) {
    const int row = c / kChunks, chunk = c % kChunks;
    const int32_t slot_raw = slot_of(row);
    const bool valid = key0 + row < key_end;
    const int64_t slot = valid ? slot_raw : 0;
    const int64_t src = (slot * n_kv_heads + kvh) * D + chunk * 8;
    const int dst = tile_offset<D>(row, chunk);
    cp_async_16(k_tile + dst, k_cache + src, valid);
    cp_async_16(v_tile + dst, v_cache + src, valid);
  }
}

// 2^x by the SFU alone: exp2f adds range fix-ups for denormal results, which do not matter
// for probabilities (a flushed 2^-126 is zero next to the row's max of 1). ex2(-inf) = +0.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// A warp owns MA row atoms of 16 query rows (prefill: MA = 2, decode: MA = 1), and every K/V
// fragment read from shared memory with ldmatrix feeds the MMAs of all MA atoms. One fresh
// 256 B B-fragment per m16n8k16 needs ~256 B/clk of shared-memory bandwidth at tensor peak,
// twice what an SM has; MA = 2 halves the bytes per MMA.

// An atom's array seen as an array of one atom: the MA = 1 case of the *_atoms helpers.
template <typename A>
__device__ __forceinline__ auto one_atom(A& x) -> A (&)[1] {
  return reinterpret_cast<A(&)[1]>(x);
}

// S (16 rows x 8*NT keys) = Q K^T for one atom (decode); q holds its A fragments for all D/16
// k-steps, in registers for the whole key loop (prefill reads Q from shared memory instead).
template <typename T, int D, int NT>
__device__ __forceinline__ void qk_tile(float (&s)[NT][4], const uint32_t (&q)[D / 16][4], const T* k_tile,
                                        int lane) {
#pragma unroll
  for (int n = 0; n < NT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
  const int mi = lane >> 3, r8 = lane & 7;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, smem_addr(k_tile + tile_offset<D>(np * 16 + (mi >> 1) * 8 + r8, 2 * ks + (mi & 1))));
      mma_16816(s[2 * np], q[ks], b[0], b[1], T{});
      mma_16816(s[2 * np + 1], q[ks], b[2], b[3], T{});
    }
  }
}

// The A fragments of 16 query rows: row i of the fragment is q_rows[i] (nullptr: a zero row).
template <typename T, int D>
__device__ __forceinline__ void load_q_fragments(uint32_t (&q)[D / 16][4], const T* row_lo, const T* row_hi,
                                                 int lane) {
  const int t2 = (lane & 3) * 2;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    const int c = ks * 16 + t2;
    q[ks][0] = row_lo ? *reinterpret_cast<const uint32_t*>(row_lo + c) : 0u;
    q[ks][1] = row_hi ? *reinterpret_cast<const uint32_t*>(row_hi + c) : 0u;
    q[ks][2] = row_lo ? *reinterpret_cast<const uint32_t*>(row_lo + c + 8) : 0u;
    q[ks][3] = row_hi ? *reinterpret_cast<const uint32_t*>(row_hi + c + 8) : 0u;
  }
}

// S[a] (16 rows x 8*NT keys) = Q[a] K^T for the warp's MA atoms; each K fragment pair is
// loaded once for all atoms. The Q A-fragments are read from shared memory (a [rows][D] tile
// swizzled like K/V, `q_tile` at the warp's first row, a multiple of 8) with one ldmatrix
// per atom and k-step, just before use. That frees the D/4 * MA registers that would hold
// Q for the whole key loop, so S can cover 64 keys (16 independent accumulator chains per
// k-step at MA = 2, and one softmax per 64 keys). Costs 2 * MA ldmatrix.x4 per k-step
// beside the NT / 2 of K: at NT = 8, MA = 2, 192 B of shared memory per QK MMA instead of 128.
template <typename T, int D, int NT, int MA>
__device__ __forceinline__ void qk_tile_atoms_qsmem(float (&s)[MA][NT][4], const T* q_tile, const T* k_tile,
                                                    int lane) {
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int n = 0; n < NT; ++n) s[a][n][0] = s[a][n][1] = s[a][n][2] = s[a][n][3] = 0.f;
  const int mi = lane >> 3, r8 = lane & 7;
  // Unrolled by 2 only: fully unrolled, ptxas hoists the Q/K fragment loads of later k-steps
  // and spills at NT = 8, MA = 2, D = 128 (s does not depend on ks, so rolling is free).
#pragma unroll 2
  for (int ks = 0; ks < D / 16; ++ks) {
    // Matrices 0..3 of the x4 load are a0..a3: (rows 0-7 | 8-15) x (cols 0-7 | 8-15) of the k-step.
    uint32_t qa[MA][4];
#pragma unroll
    for (int a = 0; a < MA; ++a)
      ldmatrix_x4(qa[a], smem_addr(q_tile + tile_offset<D>(a * 16 + (mi & 1) * 8 + r8, 2 * ks + (mi >> 1))));
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t b[4];
      ldmatrix_x4(b, smem_addr(k_tile + tile_offset<D>(np * 16 + (mi >> 1) * 8 + r8, 2 * ks + (mi & 1))));
#pragma unroll
      for (int a = 0; a < MA; ++a) {
        mma_16816(s[a][2 * np], qa[a], b[0], b[1], T{});
        mma_16816(s[a][2 * np + 1], qa[a], b[2], b[3], T{});
      }
    }
  }
}

// P (exponentiated S, C fragments) packed to T as the A fragments of P V: pa[a][kk] covers keys
// 16 kk .. 16 kk + 15. Packing right after the softmax halves the registers P holds during PV.
template <typename T, int NT, int MA>
__device__ __forceinline__ void pack_p_atoms(uint32_t (&pa)[MA][NT / 2][4], const float (&p)[MA][NT][4]) {
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int kk = 0; kk < NT / 2; ++kk) {
      pa[a][kk][0] = pack2<T>(p[a][2 * kk][0], p[a][2 * kk][1]);
      pa[a][kk][1] = pack2<T>(p[a][2 * kk][2], p[a][2 * kk][3]);
      pa[a][kk][2] = pack2<T>(p[a][2 * kk + 1][0], p[a][2 * kk + 1][1]);
      pa[a][kk][3] = pack2<T>(p[a][2 * kk + 1][2], p[a][2 * kk + 1][3]);
    }
}

// O[a] (16 rows x D) += P[a] V for the warp's MA atoms, P packed by pack_p_atoms. Each V
// fragment pair is loaded once for all atoms.
template <typename T, int D, int NT, int MA>
__device__ __forceinline__ void pv_tile_atoms_packed(float (&o)[MA][D / 8][4], const uint32_t (&pa)[MA][NT / 2][4],
                                                     const T* v_tile, int lane) {
  const int mi = lane >> 3, r8 = lane & 7;
#pragma unroll
  for (int kk = 0; kk < NT / 2; ++kk) {
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, smem_addr(v_tile + tile_offset<D>(kk * 16 + (mi & 1) * 8 + r8, 2 * dp + (mi >> 1))));
#pragma unroll
      for (int a = 0; a < MA; ++a) {
        mma_16816(o[a][2 * dp], pa[a][kk], b[0], b[1], T{});
        mma_16816(o[a][2 * dp + 1], pa[a][kk], b[2], b[3], T{});
      }
    }
  }
}

// O (16 rows x D) += P V for one atom (decode), P given as the C fragments of S.
template <typename T, int D, int NT>
__device__ __forceinline__ void pv_tile(float (&o)[D / 8][4], const float (&p)[NT][4], const T* v_tile, int lane) {
  uint32_t pa[1][NT / 2][4];
  pack_p_atoms<T, NT, 1>(pa, one_atom(p));
  pv_tile_atoms_packed<T, D, NT, 1>(one_atom(o), pa, v_tile, lane);
}

// Online-softmax step of one atom for the thread's two rows (h = 0: row g, h = 1: row g+8);
// masked scores are -inf. m is the running max in log2 units; l the thread's partial row sum
// (reduced over 4 lanes at the end); alpha[h] the factor row h of o must be scaled by.
// `grew` is set when a row max grows. Two arithmetics, each exactly as its kernel had it:
//  * kRawScores (prefill): `s` holds raw scores; the scale (log2 units) is folded into one
//    FFMA per score, exp2_approx(s * scale - m), instead of a separate multiply (needs
//    scale > 0: the max of scaled scores is then the scaled max).
//  * else (decode): `s` is already in log2 units (scale_log2 unused); exp2f(s - m).
template <int NT, bool kRawScores>
__device__ __forceinline__ void softmax_rows(float (&s)[NT][4], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                             bool& grew, float scale_log2) {
  const auto ex2 = [](float x) { return kRawScores ? exp2_approx(x) : exp2f(x); };
  const auto shifted = [&](float x, float m_use) { return kRawScores ? fmaf(x, scale_log2, -m_use) : x - m_use; };
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < NT; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[h], kRawScores ? mx * scale_log2 : mx);
    grew |= m_new > m[h];
    // A row with nothing unmasked yet keeps m = -inf; exponentiate against 0 so that
    // -inf - (-inf) never makes a NaN (its p and alpha are then 0).
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    alpha[h] = ex2(m[h] - m_use);
    float sum = 0.f;
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      s[n][2 * h] = ex2(shifted(s[n][2 * h], m_use));
      s[n][2 * h + 1] = ex2(shifted(s[n][2 * h + 1], m_use));
      sum += s[n][2 * h] + s[n][2 * h + 1];
    }
    l[h] = l[h] * alpha[h] + sum;
    m[h] = m_new;
  }
}

template <int D>
__device__ __forceinline__ void rescale_rows(float (&o)[D / 8][4], const float (&alpha)[2]) {
#pragma unroll
  for (int d = 0; d < D / 8; ++d) {
    o[d][0] *= alpha[0];
    o[d][1] *= alpha[0];
    o[d][2] *= alpha[1];
    o[d][3] *= alpha[1];
  }
}

// Online-softmax update of the warp's MA atoms (prefill: raw scores). The rescale of o
// (D/2 * MA multiplies a thread) is skipped when no row of the warp has a new max: then
// every alpha is exactly 1, and past the first key tiles that is the common case.
template <int D, int NT, int MA>
__device__ __forceinline__ void softmax_update_atoms(float (&s)[MA][NT][4], float (&o)[MA][D / 8][4],
                                                     float (&m)[MA][2], float (&l)[MA][2], float scale_log2) {
  float alpha[MA][2];
  bool grew = false;
#pragma unroll
  for (int a = 0; a < MA; ++a) softmax_rows<NT, true>(s[a], m[a], l[a], alpha[a], grew, scale_log2);
  if (__any_sync(0xffffffffu, grew)) {  // warp-uniform branch
#pragma unroll
    for (int a = 0; a < MA; ++a) rescale_rows<D>(o[a], alpha[a]);
  }
}

// Online-softmax update of one atom (decode): `s` already scaled to log2 units and masked;
// o is always rescaled.
template <int D, int NT>
__device__ __forceinline__ void softmax_update(float (&s)[NT][4], float (&o)[D / 8][4], float (&m)[2], float (&l)[2]) {
  float alpha[2];
  bool grew = false;  // unused: o is always rescaled
  softmax_rows<NT, false>(s, m, l, alpha, grew, 1.f);
  rescale_rows<D>(o, alpha);
}

}  // namespace seam::cuda::flash
