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
    json.dump(ref, open(path, "w"))


if __name__ == "__main__":
    main()
