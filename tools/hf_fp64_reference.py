"""Adds transformers' float64 last-token logits to a reference.json made by make_random_models.py,
and prints how far transformers' own float32 run (the reference's last_logits_fp32) is from them.

Why: hf_parity_test holds seam's float32 logits within 1e-4 of transformers' float32 logits. When
that misses, the float64 run says whose rounding the gap is: if transformers' float32 is itself
~1e-4 from float64, 1e-4 between two float32 runs is rounding, not a bug.

  python3 tools/hf_fp64_reference.py MODEL_DIR        (on the GPU machine; rewrites reference.json)
"""
import json
import math
import os
import sys

import torch
from transformers import AutoModelForCausalLM


def rel_err(a, b):
    num = sum((x - y) ** 2 for x, y in zip(a, b))
    den = sum(y * y for y in b)
    return math.sqrt(num / den)


def rope64_forward(rot, cfg):
    """A float64 replacement for the rotary embedding's forward (default and longrope types)."""
    params = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    kind = params.get("rope_type", params.get("type", "default"))
    base = params.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    dim = int(head_dim * getattr(cfg, "partial_rotary_factor", 1.0))
    i = torch.arange(0, dim, 2, dtype=torch.float64, device="cuda") / dim
    inv = 1.0 / (base ** i)
    scale = 1.0
    orig = params.get("original_max_position_embeddings", getattr(cfg, "original_max_position_embeddings", None))
    if kind == "longrope":
        factor = cfg.max_position_embeddings / orig
        scale = math.sqrt(1 + math.log(factor) / math.log(orig)) if factor > 1 else 1.0
        short = torch.tensor(params["short_factor"], dtype=torch.float64, device="cuda")
        long = torch.tensor(params["long_factor"], dtype=torch.float64, device="cuda")
    elif kind != "default":
        return None

    def forward(x, position_ids):
        ext = 1.0
        if kind == "longrope":
            ext = long if int(position_ids.max()) + 1 > orig else short
        freqs = position_ids[:, :, None].double() * (inv / ext)[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * scale).to(x.dtype), (emb.sin() * scale).to(x.dtype)
    return forward


def main():
    d = sys.argv[1]
    path = os.path.join(d, "reference.json")
    ref = json.load(open(path))
    torch.backends.cuda.matmul.allow_tf32 = False
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager").to("cuda")
    model.eval()
    for mod in model.modules():  # Gemma 3: the embedding scale as float64 loading makes it
        if isinstance(getattr(mod, "embed_scale", None), torch.Tensor):
            cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
            mod.embed_scale = torch.tensor(cfg.hidden_size ** 0.5, dtype=torch.float64, device="cuda")
    with torch.no_grad():
        for p in ref["prompts"]:
            lf = model(torch.tensor([p["ids"]], device="cuda")).logits[0, -1].cpu().tolist()
            p["last_logits_fp64"] = lf
            print(f"{os.path.basename(d)} prompt {len(p['ids'])} tokens: transformers fp32 vs fp64 rel err "
                  f"{rel_err(p['last_logits_fp32'], lf):.3g}, bf16 vs fp64 {rel_err(p['last_logits_bf16'], lf):.3g}",
                  flush=True)
    rots = [m for m in model.modules() if type(m).__name__.endswith("RotaryEmbedding")]
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    fwd = rope64_forward(rots[0], cfg) if len(rots) == 1 else None
    if fwd is None:
        print("rope64: skipped (not one rotary embedding of type default or longrope)")
    else:
        rots[0].forward = fwd
        with torch.no_grad():
            for p in ref["prompts"]:
                lf = model(torch.tensor([p["ids"]], device="cuda")).logits[0, -1].cpu().tolist()
                p["last_logits_fp64_rope64"] = lf
                print(f"{os.path.basename(d)} prompt {len(p['ids'])} tokens: against fp64 with float64 RoPE: "
                      f"transformers fp32 {rel_err(p['last_logits_fp32'], lf):.3g}, "
                      f"transformers fp64 {rel_err(p['last_logits_fp64'], lf):.3g}", flush=True)
    json.dump(ref, open(path, "w"))


if __name__ == "__main__":
    main()
