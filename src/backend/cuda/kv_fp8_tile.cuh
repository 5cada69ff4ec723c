// The FP8 KV path of the tensor-core attention kernels (decode, mma.sync prefill, wgmma
// prefill): K/V tiles of E4M3 codes are gathered with cp.async into a plain staging tile
// ([rows][D] bytes, half the bytes of a bf16 tile), then dequantised by the threads into the
// kernel's own bf16/f16 tile layout, on which the unchanged MMA code runs (kv_fp8.cuh: the
// values are exact, the scales are applied outside the tile). bf16 dequantisation, not FP8
// MMA: the tiles hold exactly the cached values, so a kernel differs from the CPU backend by
// float rounding only, and P V keeps P in bf16/f16 as with a float cache.
#pragma once
#include <cstdint>

#include "backend/cuda/flash_mma.cuh"
#include "backend/cuda/kv_fp8.cuh"

namespace seam::cuda::flash {

// Byte offset of (row, 16-code chunk) in a [rows][D] tile of codes whose chunks are XOR-swizzled
// so that the 8 rows one ldmatrix matrix reads (8 rows x 16 bytes) hit 8 different 16-byte bank
// groups: rows of a multiple of 128 bytes, chunk ^ (row % 8); D = 64 (64-byte rows, two a bank
// line), chunk ^ ((row / 2) % 4). The register-fragment decode reads its K / V fragments from such
// tiles (kv_fp8_frag.cuh). The pattern repeats every 8 rows.
template <int D>
__device__ __forceinline__ int code_tile_offset(int row, int chunk) {
  static_assert(D % 128 == 0 || D == 64, "code_tile_offset: head dims 64, 128, 256");
  if constexpr (D % 128 == 0)
    return row * D + ((chunk ^ (row & 7)) << 4);
  else
    return row * D + ((chunk ^ ((row >> 1) & 3)) << 4);
}

// As load_kv_tile (flash_mma.cuh) for a cache of codes: keys [key0, key0 + ROWS) of kv head
// `kvh` into K and V staging tiles [ROWS][D] bytes (16-byte chunks of 16 codes, unswizzled, or
// with kSwizzle at code_tile_offset), zero-filled at or past key_end (code 0 is +0). One
// cp.async group, not committed here.
template <int D, int ROWS, bool kSwizzle = false, typename SlotOf>
__device__ __forceinline__ void load_kv_tile_fp8(uint8_t* k_tile, uint8_t* v_tile, const uint8_t* k_cache,
                                                 const uint8_t* v_cache, SlotOf slot_of, int key0, int key_end,
                                                 int n_kv_heads, int kvh, int tid, int n_threads) {
  static_assert(D % 16 == 0, "FP8 tiles move 16-code chunks");
  constexpr int kChunks = D / 16;
#pragma unroll 4
  for (int c = tid; c < ROWS * kChunks; c += n_threads) {
    const int row = c / kChunks, chunk = c % kChunks;
    const int32_t slot_raw = slot_of(row);
    const bool valid = key0 + row < key_end;
    const int64_t slot = valid ? slot_raw : 0;
    const int64_t src = (slot * n_kv_heads + kvh) * D + chunk * 16;
    int dst;
    if constexpr (kSwizzle)
      dst = code_tile_offset<D>(row, chunk);
    else
      dst = row * D + chunk * 16;
    cp_async_16(k_tile + dst, k_cache + src, valid);
    cp_async_16(v_tile + dst, v_cache + src, valid);
  }
}

// Dequantises staging tiles [ROWS][D] codes into T tiles: 8 codes -> one 16-byte chunk of 8 T
// at dst_of(tile, row, chunk) (tile 0: K, 1: V; chunk = element / 8, so the caller's swizzle
// applies). `tid`/`n_threads` split the work; the caller synchronises before and after.
template <typename T, int D, int ROWS, typename DstOf>
__device__ __forceinline__ void dequant_kv_tiles(const uint8_t* k_stage, const uint8_t* v_stage, DstOf dst_of, int tid,
                                                 int n_threads) {
  constexpr int kChunks = D / 8;
#pragma unroll 4
  for (int c = tid; c < ROWS * kChunks; c += n_threads) {
    const int row = c / kChunks, chunk = c % kChunks;
    const int at = row * D + chunk * 8;
    const uint2 k8 = *reinterpret_cast<const uint2*>(k_stage + at);
    const uint2 v8 = *reinterpret_cast<const uint2*>(v_stage + at);
    *reinterpret_cast<uint4*>(dst_of(0, row, chunk)) = e4m3x8_to<T>(k8);
    *reinterpret_cast<uint4*>(dst_of(1, row, chunk)) = e4m3x8_to<T>(v8);
  }
}

// The same into two [ROWS][D] tiles swizzled by tile_offset<D> (the mma.sync kernels' layout).
template <typename T, int D, int ROWS>
__device__ __forceinline__ void dequant_kv_tiles_swizzled(T* k_tile, T* v_tile, const uint8_t* k_stage,
                                                          const uint8_t* v_stage, int tid, int n_threads) {
  dequant_kv_tiles<T, D, ROWS>(
      k_stage, v_stage,
      [&](int which, int row, int chunk) { return (which == 0 ? k_tile : v_tile) + tile_offset<D>(row, chunk); }, tid,
      n_threads);
}

}  // namespace seam::cuda::flash
