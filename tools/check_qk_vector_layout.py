#!/usr/bin/env python3
"""Checks qk_norm_rope_store's vector form (src/backend/cuda/qk_norm_rope_store.cu,
qk_norm_rope_store_vector_kernel) as transcribed here, without a GPU: its index expressions
(vector_layout's tokens a block and the launcher's clamp of them, a lane group's items g + m G, the warp-uniform break, the
butterfly over xor L/2 .. 1, the rotary partner at xor L/2, pair0 and the cos / sin offsets) run
lane by lane in Python with the kernel's float32 arithmetic (each operation rounded to float32),
against a per-head reference (the per-head kernel's algorithm: a head's RMS norm, normed values
rounded to T, pairs (i, i + d/2) rotated). Asserts every lane's slice of every head written once,
q / k within the CUDA test's bound ((3 u + 2 d 2^-23) of the head's largest magnitude, u T's
spacing at 1), v and k heads stored to the cache slots in range and no other, slots out of range
skipped, and that a mutation of the partner or cos / sin index fails. It checks the
transcription, not the compiled kernel: cuda_qk_norm_rope_store_test does that on the GPU.

    python3 tools/check_qk_vector_layout.py
"""
import math
import random
import struct
import sys

K_WARPS, K_VEC_ITEMS, K_VECTOR_BLOCKS = 8, 8, 256
NAN = float("nan")


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def round1(x, dtype):
    x = f32(x)
    if dtype == "f32":
        return x
    if dtype == "f16":
        return struct.unpack("<e", struct.pack("<e", x))[0]
    b = struct.unpack("<I", struct.pack("<f", x))[0]  # bf16: round to nearest even on the top 16 bits
    b = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000) & 0xFFFFFFFF
    return struct.unpack("<f", struct.pack("<I", b))[0]


def round_t(xs, dtype):
    return [round1(v, dtype) for v in xs]


def vector_layout(n_all, d, elt):
    v = 16 // elt
    if d % v:
        return 0, 0
    lanes = d // v
    if lanes < 2 or lanes > 32 or lanes & (lanes - 1):
        return 0, 0
    groups = K_WARPS * 32 // lanes
    return lanes, min(4, groups * K_VEC_ITEMS // max(n_all, 1))


def launch_tokens(n, layout_tok):
    """The launcher's tokens a block: several only once that leaves >= K_VECTOR_BLOCKS blocks."""
    return max(1, min(n // K_VECTOR_BLOCKS, layout_tok))


def angles(pos, half):
    a = [pos * 1e6 ** (-i / half) for i in range(half)]
    return [f32(math.cos(v)) for v in a], [f32(math.sin(v)) for v in a]


def rotate(x0, x1, c, s):
    return f32(f32(x0 * c) - f32(x1 * s)), f32(f32(x1 * c) + f32(x0 * s))


def scale_of(ss, d):
    return f32(1.0 / f32(math.sqrt(f32(f32(ss / d) + f32(1e-6)))))


def grid(a, b, c):
    return [[[NAN] * c for _ in range(b)] for _ in range(a)]


def run_vector(qkv, heads, kv, d, dtype, pos, slots, n_slots, qn, kn, mutate=None, full_blocks=False):
    """qkv: [n][n_all][d] lists, rewritten in place; returns (qkv, k cache, v cache, writes). full_blocks:
    the layout's most tokens a block, as the launcher gives them from 256 of them a block on (the kernel's
    code is the same whatever n; a few tokens stand for many here)."""
    n = len(qkv)
    elt = {"f32": 4, "f16": 2, "bf16": 2}[dtype]
    V = 16 // elt
    L, layout_tok = vector_layout(heads + 2 * kv, d, elt)
    assert layout_tok >= 1
    tok = layout_tok if full_blocks else launch_tokens(n, layout_tok)
    G, HALF, n_qk, n_all = K_WARPS * 32 // L, d // 2, heads + kv, heads + 2 * kv
    x = qkv
    kc, vc = grid(n_slots, kv, d), grid(n_slots, kv, d)
    writes = {}  # (token, head, lane of the head) -> times written
    for b in range((n + tok - 1) // tok):
        tok0 = b * tok
        n_tok = min(tok, n - tok0)
        n_items = n_tok * n_all
        cs = []
        for t in range(n_tok):
            c, s_ = angles(pos[tok0 + t], HALF)
            cs.append(c + s_)  # [2 HALF]: cos then sin
        raw = {}  # (thread, m) -> the lane's V values, every load before any use
        for th in range(K_WARPS * 32):
            g, gl = th // L, th % L
            for m in range(K_VEC_ITEMS):
                item = g + m * G
                if item < n_items:
                    t = item // n_all
                    raw[th, m] = list(x[tok0 + t][item - t * n_all][gl * V:gl * V + V])
                else:
                    raw[th, m] = [0.0] * V
        for w in range(K_WARPS):
            lanes = range(32 * w, 32 * w + 32)
            warp_g0 = (32 * w) // L
            for m in range(K_VEC_ITEMS):
                if warp_g0 + m * G >= n_items:
                    break
                ss = {}
                for th in lanes:
                    acc = 0.0
                    for v in raw[th, m]:
                        acc = f32(v * v + acc)  # __fmaf_rn: one rounding (v * v is exact in a double)
                    ss[th] = acc
                o = L // 2
                while o > 0:  # the butterfly: each lane adds its xor-o partner's sum of the same round
                    ss = {th: f32(ss[th] + ss[(th & ~31) | ((th & 31) ^ o)]) for th in lanes}
                    o //= 2
                y = {}
                for th in lanes:
                    g, gl = th // L, th % L
                    item = g + m * G
                    t = item // n_all if item < n_items else 0
                    head = item - t * n_all if item < n_items else 0
                    scale = scale_of(ss[th], d)
                    wv = (qn if head < heads else kn)[gl * V:gl * V + V]
                    y[th] = [round1(f32(f32(v * scale) * wk), dtype) for v, wk in zip(raw[th, m], wv)]
                for th in lanes:
                    g, gl = th // L, th % L
                    item = g + m * G
                    if item >= n_items:
                        continue
                    t = item // n_all
                    head = item - t * n_all
                    tk = tok0 + t
                    slot = slots[tk]
                    store = 0 <= slot < n_slots
                    writes[tk, head, gl] = writes.get((tk, head, gl), 0) + 1
                    if head >= n_qk:
                        if store:
                            vc[slot][head - n_qk][gl * V:gl * V + V] = raw[th, m]
                        continue
                    px = L // 2 if mutate != "partner" else max(L // 4, 1)
                    p = y[(th & ~31) | ((th & 31) ^ px)]
                    lo = gl < L // 2
                    pair0 = (gl if lo else gl - L // 2) * V
                    if mutate == "cos":
                        pair0 = (gl * V) % HALF + 1
                    r = []
                    for k in range(V):
                        i = min(pair0 + k, HALF - 1)
                        c, s_ = cs[t][i], cs[t][HALF + i]
                        r0, r1 = rotate(y[th][k], p[k], c, s_) if lo else rotate(p[k], y[th][k], c, s_)
                        r.append(r0 if lo else r1)
                    out = round_t(r, dtype)
                    x[tk][head][gl * V:gl * V + V] = out
                    if head >= heads and store:
                        kc[slot][head - heads][gl * V:gl * V + V] = out
    return x, kc, vc, writes


def reference(qkv, heads, kv, d, dtype, pos, slots, n_slots, qn, kn):
    """The per-head kernel's algorithm, summing each head's squares in plain order."""
    n_qk, HALF = heads + kv, d // 2
    x = qkv
    kc, vc = grid(n_slots, kv, d), grid(n_slots, kv, d)
    for tk in range(len(x)):
        c, s_ = angles(pos[tk], HALF)
        for h in range(heads + 2 * kv):
            if h < n_qk:
                v = x[tk][h]
                ss = 0.0
                for e in v:
                    ss = f32(e * e + ss)
                scale = scale_of(ss, d)
                wv = qn if h < heads else kn
                y = [round1(f32(f32(e * scale) * wk), dtype) for e, wk in zip(v, wv)]
                r = [0.0] * d
                for i in range(HALF):
                    r[i], r[i + HALF] = rotate(y[i], y[i + HALF], c[i], s_[i])
                x[tk][h] = round_t(r, dtype)
            if 0 <= slots[tk] < n_slots and h >= heads:
                (kc if h < n_qk else vc)[slots[tk]][(h - heads) % kv] = list(x[tk][h])
    return x, kc, vc


def check(heads, kv, d, dtype, n, rng, mutate=None, full_blocks=False):
    n_all, n_slots = heads + 2 * kv, n + 5
    draw = [[round_t([rng.gauss(0, 7) for _ in range(d)], dtype) for _ in range(n_all)] for _ in range(n)]
    qn, kn = round_t([rng.gauss(0, 1) for _ in range(d)], dtype), round_t([rng.gauss(0, 1) for _ in range(d)], dtype)
    pos = [rng.randrange(100000) for _ in range(n)]
    perm = list(range(n_slots))
    rng.shuffle(perm)
    slots = perm[:n]
    if n > 1:
        slots[1] = n_slots  # out of range: skipped
    if n > 2:
        slots[2] = -1
    copy = lambda: [[list(h) for h in tk] for tk in draw]
    got = run_vector(copy(), heads, kv, d, dtype, pos, slots, n_slots, qn, kn, mutate, full_blocks)
    want = reference(copy(), heads, kv, d, dtype, pos, slots, n_slots, qn, kn)
    u = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}[dtype]
    L = vector_layout(n_all, d, 4 if dtype == "f32" else 2)[0]
    every = {(t, h, gl) for t in range(n) for h in range(n_all) for gl in range(L)}
    if set(got[3]) != every or any(w != 1 for w in got[3].values()):  # each lane's slice of each head once
        return False
    for a, b in zip(got[:3], want):
        for ra, rb in zip((h for t in a for h in t), (h for t in b for h in t)):
            big = max((abs(e) for e in rb if not math.isnan(e)), default=0.0)
            for ea, eb in zip(ra, rb):
                if math.isnan(ea) != math.isnan(eb):
                    return False
                if not math.isnan(ea) and abs(ea - eb) > (3 * u + 2 * d * 2.0 ** -23) * big:
                    return False
    return True


def main():
    rng = random.Random(7)
    shapes = [(32, 4, 128), (32, 8, 128), (8, 4, 256), (4, 2, 16), (8, 2, 64)]
    n_cases = 0
    for dtype in ("bf16", "f16", "f32"):
        for heads, kv, d in shapes:
            if vector_layout(heads + 2 * kv, d, 4 if dtype == "f32" else 2)[1] < 1:
                continue
            for n, full in ((1, False), (7, False), (7, True)):
                if not check(heads, kv, d, dtype, n, rng, full_blocks=full):
                    print(f"FAIL {dtype} {heads}/{kv} d {d} n {n}{' (full blocks)' if full else ''}")
                    return 1
                n_cases += 1
    assert launch_tokens(64, 3) == 1 and launch_tokens(768, 3) == 3 and launch_tokens(512, 3) == 2
    for mutate in ("partner", "cos"):
        if check(32, 4, 128, "bf16", 7, rng, mutate, full_blocks=True):
            print(f"FAIL: the mutation '{mutate}' was not caught")
            return 1
    print(f"ok: {n_cases} cases match the per-head reference; both mutations caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
