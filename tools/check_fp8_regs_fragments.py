#!/usr/bin/env python3
"""Desk check of the FP8 decode kernel's register-fragment index maps, without a GPU.

The maps live in src/backend/cuda/kv_fp8_frag.cuh (Q / K / V fragments), kv_fp8_tile.cuh
(code_tile_offset: the swizzled tile of codes) and attention_decode.cu (the output store). This
script simulates, in exact arithmetic, what each lane of a warp gets from the PTX instructions the
kernel uses -- ldmatrix.x4 (b16 view) on a tile of codes, the byte pairing of e4m3x4_to_pairs,
mma.m16n8k16's A / B / C fragments, movmatrix.trans -- with the kernel's index expressions
transcribed, and checks for head dims 64, 128 and 256 that:
  * S = Q K^T and O = P V come out whole (every entry, exactly);
  * the 8 rows of every ldmatrix matrix sit in 8 different 16-byte bank groups;
and that the bit decode (masks, shift, times 2^(7 - bias)) gives every E4M3 code's value in bf16
and f16 (the NaN codes: +-480).

It checks the maps as transcribed here, not the compiled kernel: cuda_fp8_kv_test does that on the
GPU (run it with SEAM_DECODE_FP8_REGS=1). Run: python3 tools/check_fp8_regs_fragments.py
"""
import random
import struct

KEYS = 16  # keys a warp tile


def code_tile_offset(d, row, chunk):
    """kv_fp8_tile.cuh: byte offset of (row, 16-byte chunk) in a [rows][d] tile of codes."""
    if d % 128 == 0:
        return row * d + ((chunk ^ (row & 7)) << 4)
    return row * d + ((chunk ^ ((row >> 1) & 3)) << 4)


def smem_tile(d, rows):
    """A [16][d] matrix laid out as the ring's swizzled tile (one value a byte)."""
    m = [None] * (KEYS * d)
    for r in range(KEYS):
        for c in range(d // 16):
            at = code_tile_offset(d, r, c)
            m[at:at + 16] = rows[r][c * 16:c * 16 + 16]
    return m


def ldmatrix_x4(d, smem, p):
    """ldmatrix.x4 (b16) with lane L addressing row (L/8 % 2) * 8 + L % 8, chunk 2p + L/16 (the
    kernel's address); returns [lane][matrix] = the 4 bytes (2 b16) lane gets of that matrix."""
    addr = [code_tile_offset(d, ((lane >> 3) & 1) * 8 + (lane & 7), 2 * p + (lane >> 4)) for lane in range(32)]
    out = [[None] * 4 for _ in range(32)]
    for m in range(4):
        for lane in range(32):
            a = addr[8 * m + lane // 4] + 4 * (lane % 4)  # row lane/4 of matrix m, b16 cols 2t, 2t+1
            out[lane][m] = smem[a:a + 4]
    return out


def pairs(x):
    """e4m3x4_to_pairs: (byte 0, byte 2) and (byte 1, byte 3)."""
    return (x[0], x[2]), (x[1], x[3])


def mma(c, a, b):
    """c += A B for m16n8k16 fragments: a[lane] = (a0, a1, a2, a3), b[lane] = (b0, b1), pairs each."""
    A = [[0] * 16 for _ in range(16)]
    B = [[0] * 8 for _ in range(16)]
    for lane in range(32):
        g, t = lane // 4, lane % 4
        (A[g][2 * t], A[g][2 * t + 1]), (A[g + 8][2 * t], A[g + 8][2 * t + 1]) = a[lane][0], a[lane][1]
        (A[g][2 * t + 8], A[g][2 * t + 9]), (A[g + 8][2 * t + 8], A[g + 8][2 * t + 9]) = a[lane][2], a[lane][3]
        (B[2 * t][g], B[2 * t + 1][g]), (B[2 * t + 8][g], B[2 * t + 9][g]) = b[lane][0], b[lane][1]
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for e, (row, col) in enumerate(((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))):
            c[lane][e] += sum(A[row][k] * B[k][col] for k in range(16))


def movmatrix_trans(frag):
    """movmatrix.trans: lane (g, t) held M[g][2t], M[g][2t+1]; it now holds M[2t][g], M[2t+1][g]."""
    m = [[None] * 8 for _ in range(8)]
    for lane in range(32):
        g, t = lane // 4, lane % 4
        m[g][2 * t], m[g][2 * t + 1] = frag[lane]
    return [(m[2 * (lane % 4)][lane // 4], m[2 * (lane % 4) + 1][lane // 4]) for lane in range(32)]


def fp8_regs_dim(n, e, lane):
    """attention_decode.cu's output store: the dim of o[n][e] on the register path."""
    return 16 * (n >> 1) + 4 * (lane & 3) + 2 * (e & 1) + (n & 1)


def check_head_dim(d):
    rnd = lambda rows, cols, lim: [[random.randint(-lim, lim) for _ in range(cols)] for _ in range(rows)]
    Q, K, V, P = rnd(16, d, 50), rnd(KEYS, d, 50), rnd(KEYS, d, 50), rnd(16, KEYS, 5)
    for p in range(d // 32):  # bank groups of every matrix's 8 rows
        for m in range(4):
            units = {(code_tile_offset(d, (m & 1) * 8 + r, 2 * p + (m >> 1)) // 16) % 8 for r in range(8)}
            assert len(units) == 8, (d, p, m, units)
    k_smem, v_smem = smem_tile(d, K), smem_tile(d, V)

    # Q's A fragments under the dim map (load_q_fragments_fp8_regs): per k-step ks, lane (g, t)
    # reads dims 16 ks + 4t .. + 3 of rows g and g + 8; a0 / a1 = (d0, d2), a2 / a3 = (d1, d3).
    qf = []
    for ks in range(d // 16):
        f = []
        for lane in range(32):
            g, c = lane // 4, ks * 16 + 4 * (lane % 4)
            lo, hi = Q[g][c:c + 4], Q[g + 8][c:c + 4]
            f.append(((lo[0], lo[2]), (hi[0], hi[2]), (lo[1], lo[3]), (hi[1], hi[3])))
        qf.append(f)
    # QK (qk_tile_fp8_regs): matrix m of ldmatrix p is (key half m % 2, k-step 2p + m / 2).
    s = [[[0] * 4 for _ in range(32)] for _ in range(2)]
    for p in range(d // 32):
        r = ldmatrix_x4(d, k_smem, p)
        for m in range(4):
            mma(s[m & 1], qf[2 * p + (m >> 1)], [pairs(r[lane][m]) for lane in range(32)])
    for n in range(2):
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for e, (row, key) in enumerate(((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))):
                want = sum(Q[row][k] * K[n * 8 + key][k] for k in range(d))
                assert s[n][lane][e] == want, ("S", d, n, lane, e)

    # P V (pv_tile_fp8_regs): P's A fragment as pack_p_atoms makes it; matrix m of ldmatrix p is
    # (key half m % 2, 16-dim block 2p + m / 2); the pairs transposed by movmatrix.
    pa = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        pa.append(((P[g][2 * t], P[g][2 * t + 1]), (P[g + 8][2 * t], P[g + 8][2 * t + 1]),
                   (P[g][2 * t + 8], P[g][2 * t + 9]), (P[g + 8][2 * t + 8], P[g + 8][2 * t + 9])))
    o = [[[0] * 4 for _ in range(32)] for _ in range(d // 8)]
    for p in range(d // 32):
        r = ldmatrix_x4(d, v_smem, p)
        for h in range(2):
            j = 2 * p + h
            keys_lo = [pairs(r[lane][2 * h]) for lane in range(32)]  # keys 0-7
            keys_hi = [pairs(r[lane][2 * h + 1]) for lane in range(32)]  # keys 8-15
            for which in range(2):  # 0: the (byte 0, byte 2) matrix -> o[2j]; 1: (1, 3) -> o[2j + 1]
                b0 = movmatrix_trans([x[which] for x in keys_lo])
                b1 = movmatrix_trans([x[which] for x in keys_hi])
                mma(o[2 * j + which], pa, list(zip(b0, b1)))
    for n in range(d // 8):
        for lane in range(32):
            for e in range(4):
                row, dim = lane // 4 + 8 * (e >> 1), fp8_regs_dim(n, e, lane)
                want = sum(P[row][k] * V[k][dim] for k in range(KEYS))
                assert o[n][lane][e] == want, ("O", d, n, lane, e)
    print("fragments ok, head dim", d)


def e4m3(c):
    s = -1.0 if c & 0x80 else 1.0
    e, m = (c >> 3) & 15, c & 7
    if e == 15 and m == 7:
        return float('nan')
    return s * (2.0**-6 * m / 8 if e == 0 else 2.0**(e - 7) * (1 + m / 8))


def bf16(bits):
    return struct.unpack('<f', struct.pack('<I', bits << 16))[0]


def f16(bits):
    return struct.unpack('<e', struct.pack('<H', bits))[0]


def check_bit_decode():
    """kv_fp8.cuh's e4m3x4_to_pairs: shift per T, then T's value times 2^(7 - bias(T))."""
    for name, shift, value, factor in (('bf16', 4, bf16, 2.0**120), ('f16', 1, f16, 2.0**8)):
        for w in range(0, 256, 4):
            x = w | (w + 1) << 8 | (w + 2) << 16 | (w + 3) << 24
            x8 = (x << 8) & 0xffffffff
            r02 = (x8 & 0x80008000) | ((x8 & 0x7f007f00) >> shift)
            r13 = (x & 0x80008000) | ((x & 0x7f007f00) >> shift)
            got = {w: value(r02 & 0xffff) * factor, w + 2: value(r02 >> 16) * factor,
                   w + 1: value(r13 & 0xffff) * factor, w + 3: value(r13 >> 16) * factor}
            for c, v in got.items():
                ref = e4m3(c)
                assert (abs(v) == 480) if ref != ref else v == ref, (name, c, v, ref)
        print("bit decode ok,", name)


if __name__ == '__main__':
    random.seed(1)
    for head_dim in (64, 128, 256):
        check_head_dim(head_dim)
    check_bit_decode()
