#!/usr/bin/env python3
"""The floor of one forward step of a (mixture-of-experts or dense) config.json on the H200.

  tools/moe_floor.py CONFIG.json decode BATCH [CONTEXT]   one decode step of BATCH rows
  tools/moe_floor.py CONFIG.json extend TOKENS            one prefill of TOKENS tokens (one sequence)

Prints one line: the weight bytes the step must read (16-bit weights), the floor they set at
SEAM_FLOOR_BW B/s (default 4.3e12, the H200's measured copy bandwidth, as docs/performance.md uses;
scripts/floor_bandwidth.sh sets it for the GPU in use), the KV bytes a
decode step reads at CONTEXT (default 160: bench input 128 + half of 64 outputs) and, for
extend, the matmul floor at 989e12 FLOP/s (dense bf16); the step floor is the larger.

Experts read per layer at batch B: a token picks k distinct of E experts, so under spread
routing an expert is missed by all B tokens with probability (1 - k/E)^B and a step reads
E * (1 - (1 - k/E)^B) experts per sparse layer (Qwen3-30B-A3B at 64 rows: 125.9 of 128).
"""
import json
import os
import sys

BW, FLOPS, BYTES = float(os.environ.get("SEAM_FLOOR_BW", "4.3e12")), 989e12, 2


def shape(cfg):
    h, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim") or h // heads
    attn = h * (heads * hd + 2 * kv * hd) + heads * hd * h
    E = cfg.get("num_experts") or cfg.get("num_local_experts") or 0
    k = cfg.get("num_experts_per_tok", 0)
    mixtral = cfg.get("model_type") == "mixtral"
    inter_moe = cfg["intermediate_size"] if mixtral else cfg.get("moe_intermediate_size", 0)
    step = cfg.get("decoder_sparse_step", 1) or 1
    dense_layers = set(cfg.get("mlp_only_layers", []) or [])
    sparse = [i for i in range(L) if E and i not in dense_layers and (i + 1) % step == 0]
    shared = cfg.get("shared_expert_intermediate_size", 0) or 0
    return dict(h=h, L=L, kv=kv, hd=hd, attn=attn, E=E, k=k, expert=3 * h * inter_moe, n_sparse=len(sparse),
                dense_mlp=3 * h * cfg["intermediate_size"], shared=(3 * h * shared + h) if shared else 0,
                router=E * h, head=cfg["vocab_size"] * h)


def step_params(s, rows):
    """Parameters one step reads (experts: those hit by `rows` tokens) and those one token uses."""
    n_dense = s["L"] - s["n_sparse"]
    hit = s["E"] * (1 - (1 - s["k"] / s["E"]) ** rows) if s["E"] else 0
    per_sparse = s["router"] + s["shared"]
    read = s["L"] * s["attn"] + n_dense * s["dense_mlp"] + s["n_sparse"] * (per_sparse + hit * s["expert"]) + s["head"]
    per_token = s["L"] * s["attn"] + n_dense * s["dense_mlp"] + s["n_sparse"] * (per_sparse + s["k"] * s["expert"])
    return read, per_token, hit


def main():
    cfg = json.load(open(sys.argv[1]))
    mode, n = sys.argv[2], int(sys.argv[3])
    s = shape(cfg)
    if mode == "decode":
        ctx = int(sys.argv[4]) if len(sys.argv) > 4 else 160
        read, _, hit = step_params(s, n)
        kv_bytes = n * ctx * s["L"] * 2 * s["kv"] * s["hd"] * BYTES
        floor = (read * BYTES + kv_bytes) / BW
        print(f"floor {floor * 1e3:.3f} ms/step = {n / floor:,.0f} tok/s (weights {read * BYTES / 1e9:.2f} GB, "
              f"{hit:.1f} experts/layer, KV {kv_bytes / 1e9:.2f} GB at context {ctx})")
    else:
        read, per_token, hit = step_params(s, n)
        heads_dim = cfg["num_attention_heads"] * s["hd"]
        flops = 2 * per_token * n + 2 * s["L"] * heads_dim * n * n  # causal QK^T and PV: 4 * L * d * n^2 / 2
        t_bytes, t_flops = read * BYTES / BW, flops / FLOPS
        floor = max(t_bytes, t_flops)
        print(f"floor {floor * 1e3:.2f} ms = {n / floor:,.0f} tok/s (matmul {t_flops * 1e3:.2f} ms for "
              f"{flops / 1e12:.1f} TFLOP; weights {read * BYTES / 1e9:.2f} GB, {t_bytes * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
