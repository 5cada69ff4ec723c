#!/usr/bin/env python3
"""Makes random-weight Hugging Face models of real shapes and reference outputs.

Run on the GPU machine (transformers + torch there). For each shape it writes
DIR/<name>/ (config.json, model.safetensors in bf16, a tokenizer.json copied
from --tokenizer) and DIR/<name>/reference.json: for prompts of 1, 17 and 1000
random token ids, transformers' last-token logits with the model in float32
(the exact reference) and in bf16 (how far bf16 rounding alone moves them),
and its first 32 greedy ids in float32, so tests/cuda/hf_parity_test.cpp can
compare seam in float32 (must match closely) and in bf16 (must be no further
from the float32 reference than transformers' own bf16 run, within a margin).
--config-only writes config.json and tokenizer.json alone, for seam's --load-format dummy
(shapes whose weights do not fit the disk).
"""
import argparse, json, os, shutil, sys, time

import torch
from transformers import AutoConfig, AutoModelForCausalLM

SHAPES = {
    "llama-3.1-8b": dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=4096,
                         intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
                         rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                         rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                           high_freq_factor=4.0, original_max_position_embeddings=8192)),
    "llama-3.2-1b": dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=2048,
                         intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=131072,
                         rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
                         rope_scaling=dict(rope_type="llama3", factor=32.0, low_freq_factor=1.0,
                                           high_freq_factor=4.0, original_max_position_embeddings=8192)),
    "qwen2.5-0.5b": dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_size=896,
                         intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936, max_position_embeddings=32768,
                         rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True),
    "qwen3-0.6b": dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_size=1024,
                       intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
                       rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
                       attention_bias=False),
    # Issue 22's FP8 parity (scripts/gpu_fp8_parity.sh): Qwen3-8B's shape.
    "qwen3-8b": dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_size=4096,
                     intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
                     rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
                     attention_bias=False),
    # Issue 24's dense families. Windowed shapes get a prompt longer than their window.
    "gemma-2-9b": dict(model_type="gemma2", architectures=["Gemma2ForCausalLM"], hidden_size=3584,
                       intermediate_size=14336, num_hidden_layers=42, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=256, vocab_size=256000, max_position_embeddings=8192,
                       rope_theta=10000.0, rms_norm_eps=1e-6, query_pre_attn_scalar=256, sliding_window=4096,
                       attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                       hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                       _prompts=(1, 17, 1000, 4500), _attn="eager"),
    "gemma-3-4b": dict(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], hidden_size=2560,
                       intermediate_size=10240, num_hidden_layers=34, num_attention_heads=8,
                       num_key_value_heads=4, head_dim=256, vocab_size=262208, max_position_embeddings=131072,
                       rope_theta=1000000.0, rope_local_base_freq=10000.0,
                       rope_scaling=dict(rope_type="linear", factor=8.0), sliding_window=1024,
                       sliding_window_pattern=6, query_pre_attn_scalar=256, rms_norm_eps=1e-6,
                       hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                       _prompts=(1, 17, 1000, 1500), _attn="eager"),
    "phi-3.5-mini": dict(model_type="phi3", architectures=["Phi3ForCausalLM"], hidden_size=3072,
                         intermediate_size=8192, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=32, vocab_size=32064, max_position_embeddings=131072,
                         original_max_position_embeddings=4096, rope_theta=10000.0, rms_norm_eps=1e-5,
                         tie_word_embeddings=False, _longrope=48),
    "phi-4-mini": dict(model_type="phi3", architectures=["Phi3ForCausalLM"], hidden_size=3072,
                       intermediate_size=8192, num_hidden_layers=32, num_attention_heads=24,
                       num_key_value_heads=8, vocab_size=200064, max_position_embeddings=131072,
                       original_max_position_embeddings=4096, partial_rotary_factor=0.75, rope_theta=10000.0,
                       rms_norm_eps=1e-5, tie_word_embeddings=True, _longrope=48),
    "mistral-7b-v0.1": dict(model_type="mistral", architectures=["MistralForCausalLM"], hidden_size=4096,
                            intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                            num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768,
                            rope_theta=10000.0, rms_norm_eps=1e-5, sliding_window=4096, tie_word_embeddings=False,
                            _prompts=(1, 17, 1000, 4500)),
    # Issue 23's mixture-of-experts shapes. Float32 references must fit one H200 (139 GiB) with the
    # model converted to float32 in place: Qwen3-30B-A3B (30.5 B parameters, 114 GiB) and
    # Qwen1.5-MoE-A2.7B (14.3 B, 53 GiB) do whole; Mixtral-8x7B (46.7 B, 174 GiB) does not, so
    # mixtral-8x7b-16l (its first 16 of 32 layers, 23.5 B, 88 GiB) is the parity shape and
    # mixtral-8x7b (all 32 layers, bf16 93 GB) is made without a reference, to be timed.
    "qwen3-30b-a3b": dict(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], hidden_size=2048,
                          intermediate_size=6144, num_hidden_layers=48, num_attention_heads=32,
                          num_key_value_heads=4, head_dim=128, vocab_size=151936, max_position_embeddings=40960,
                          rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
                          moe_intermediate_size=768, num_experts=128, num_experts_per_tok=8, norm_topk_prob=True,
                          decoder_sparse_step=1, mlp_only_layers=[]),
    # The first 24 of qwen3-30b-a3b's 48 layers: 30 GB in bf16, so it fits the GPU machine's 64 GB
    # disk (the whole shape, 61 GB, does not beside anything else); its float32 reference, 57 GiB.
    # The whole shapes are timed with --load-format dummy from their config alone (--config-only).
    "qwen3-30b-a3b-24l": dict(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], hidden_size=2048,
                              intermediate_size=6144, num_hidden_layers=24, num_attention_heads=32,
                              num_key_value_heads=4, head_dim=128, vocab_size=151936,
                              max_position_embeddings=40960, rope_theta=1000000.0, rms_norm_eps=1e-6,
                              tie_word_embeddings=False, attention_bias=False, moe_intermediate_size=768,
                              num_experts=128, num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1,
                              mlp_only_layers=[]),
    "qwen1.5-moe-a2.7b": dict(model_type="qwen2_moe", architectures=["Qwen2MoeForCausalLM"], hidden_size=2048,
                              intermediate_size=5632, num_hidden_layers=24, num_attention_heads=16,
                              num_key_value_heads=16, vocab_size=151936, max_position_embeddings=8192,
                              rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
                              moe_intermediate_size=1408, shared_expert_intermediate_size=5632, num_experts=60,
                              num_experts_per_tok=4, norm_topk_prob=False, decoder_sparse_step=1,
                              mlp_only_layers=[]),
    "mixtral-8x7b-16l": dict(model_type="mixtral", architectures=["MixtralForCausalLM"], hidden_size=4096,
                             intermediate_size=14336, num_hidden_layers=16, num_attention_heads=32,
                             num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768,
                             rope_theta=1000000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                             num_local_experts=8, num_experts_per_tok=2, sliding_window=None),
    # Four layers of Mixtral-8x7B's shape (6.0 B, 12 GB in bf16): the parity shape a short device
    # call affords (the 16-layer one takes minutes to write and reference).
    "mixtral-8x7b-4l": dict(model_type="mixtral", architectures=["MixtralForCausalLM"], hidden_size=4096,
                            intermediate_size=14336, num_hidden_layers=4, num_attention_heads=32,
                            num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768,
                            rope_theta=1000000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                            num_local_experts=8, num_experts_per_tok=2, sliding_window=None),
    "mixtral-8x7b": dict(model_type="mixtral", architectures=["MixtralForCausalLM"], hidden_size=4096,
                         intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, vocab_size=32000, max_position_embeddings=32768,
                         rope_theta=1000000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
                         num_local_experts=8, num_experts_per_tok=2, sliding_window=None, _reference=False),
}
# Four layers of the FP8 parity shapes (issue 22): every per-layer shape and the full vocabulary of
# Llama-3.1-8B / Qwen3-8B at ~4 GB in bf16, so one short device call runs every FP8 format on both
# (scripts/gpu_fp8_parity.sh PLAN); the whole shapes take ~4 minutes a format.
SHAPES["llama-3.1-8b-4l"] = dict(SHAPES["llama-3.1-8b"], num_hidden_layers=4)
SHAPES["qwen3-8b-4l"] = dict(SHAPES["qwen3-8b"], num_hidden_layers=4)

# Tiny random configs of each family for the CPU tests in CI (tests/data/hf_tiny/): saved in
# float32 (the CPU backend's dtype, so its logits must match to float32 rounding), windows of 8
# so that the 40-token prompt is longer than the window.
_TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, vocab_size=512, max_position_embeddings=4096,
             rms_norm_eps=1e-6, _prompts=(1, 17, 40), _tiny=True)
TINY_SHAPES = {
    "tiny-gemma2": dict(_TINY, model_type="gemma2", architectures=["Gemma2ForCausalLM"], rope_theta=10000.0,
                        query_pre_attn_scalar=24, sliding_window=8, attn_logit_softcapping=5.0,
                        final_logit_softcapping=3.0, hidden_activation="gelu_pytorch_tanh",
                        tie_word_embeddings=True, _attn="eager"),
    "tiny-gemma3": dict(_TINY, model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], num_hidden_layers=6,
                        rope_theta=1000000.0, rope_local_base_freq=10000.0,
                        rope_scaling=dict(rope_type="linear", factor=8.0), sliding_window=8,
                        sliding_window_pattern=3, query_pre_attn_scalar=16, hidden_activation="gelu_pytorch_tanh",
                        tie_word_embeddings=True, _attn="eager"),
    "tiny-phi3": dict(_TINY, model_type="phi3", architectures=["Phi3ForCausalLM"], num_key_value_heads=4,
                      head_dim=None, max_position_embeddings=256, original_max_position_embeddings=32,
                      rope_theta=10000.0, tie_word_embeddings=False, pad_token_id=0, eos_token_id=2, _longrope=8),
    "tiny-phi4": dict(_TINY, model_type="phi3", architectures=["Phi3ForCausalLM"], head_dim=None,
                      max_position_embeddings=256, original_max_position_embeddings=32, partial_rotary_factor=0.75,
                      rope_theta=10000.0, tie_word_embeddings=True, pad_token_id=0, eos_token_id=2, _longrope=6),
    "tiny-mistral": dict(_TINY, model_type="mistral", architectures=["MistralForCausalLM"], rope_theta=10000.0,
                         sliding_window=8, tie_word_embeddings=False),
    # Issue 23's MoE families (tiny; for the CPU reference layer).
    "tiny-qwen3-moe": dict(_TINY, model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], rope_theta=1000000.0,
                           moe_intermediate_size=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
                           decoder_sparse_step=1, mlp_only_layers=[1], tie_word_embeddings=False),
    "tiny-qwen2-moe": dict(_TINY, model_type="qwen2_moe", architectures=["Qwen2MoeForCausalLM"], rope_theta=1000000.0,
                           moe_intermediate_size=32, shared_expert_intermediate_size=64, num_experts=8,
                           num_experts_per_tok=2, norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
                           tie_word_embeddings=False, head_dim=None),
    "tiny-mixtral": dict(_TINY, model_type="mixtral", architectures=["MixtralForCausalLM"], rope_theta=1000000.0,
                         num_local_experts=4, num_experts_per_tok=2, tie_word_embeddings=False, sliding_window=None),
    # A Gemma3ForConditionalGeneration checkpoint (text + a tiny vision tower): seam loads its text model.
    "tiny-gemma3-mm": dict(model_type="gemma3", architectures=["Gemma3ForConditionalGeneration"],
                           text_config={k: v for k, v in _TINY.items() if not k.startswith("_")} | dict(
                               num_hidden_layers=6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                               rope_scaling=dict(rope_type="linear", factor=8.0), sliding_window=8,
                               sliding_window_pattern=3, query_pre_attn_scalar=16),
                           vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                              num_attention_heads=2, image_size=28, patch_size=14),
                           mm_tokens_per_image=4, image_token_index=511, boi_token_index=509, eoi_token_index=510,
                           tie_word_embeddings=True, _prompts=(1, 17, 40), _tiny=True, _attn="eager"),
}
SHAPES.update(TINY_SHAPES)


def longrope_factors(n, long):
    """LongRoPE per-frequency factors of the shape Phi-3.5's config has: rising from 1."""
    top = 60.0 if long else 2.5
    return [1.0 + (top - 1.0) * (i / max(1, n - 1)) ** 2 for i in range(n)]


def bytes_to_unicode():
    """GPT-2's byte <-> printable-character map (the ByteLevel alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def full_vocab_tokenizer(vocab_size):
    """A byte-level tokenizer.json whose vocabulary covers every model id: the
    256 bytes, then one word-like token per remaining id (" w<id>"), no merges.
    Random-weight models sample ids all over the vocabulary; with a smaller
    tokenizer most ids would decode to nothing and streamed chunks would bunch."""
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    space = b2u[ord(" ")]
    for i in range(256, vocab_size):
        vocab[f"{space}w{i}"] = i
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
            "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": vocab, "merges": []}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tokenizer", default="", help="a tokenizer.json to put in each folder "
                    "(default: a byte-level tokenizer covering the model's whole vocabulary)")
    ap.add_argument("--only", default="", help="comma list of shapes")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--config-only", action="store_true",
                    help="write config.json and tokenizer.json only, no weights (for seam --load-format dummy)")
    ap.add_argument("--one-file", action="store_true",
                    help="the weights in one model.safetensors, unsharded (seam quantize-fp8 reads one file)")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else [n for n in SHAPES if n not in TINY_SHAPES]
    torch.manual_seed(0)
    for name in names:
        t0 = time.time()
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        shape = SHAPES[name]
        tiny = shape.get("_tiny", False)
        prompt_lens = shape.get("_prompts", (1, 17, 1000))
        kw = {k: v for k, v in shape.items() if not k.startswith("_") and v is not None}
        if "_longrope" in shape:
            n = shape["_longrope"]
            kw["rope_scaling"] = dict(type="longrope", short_factor=longrope_factors(n, False),
                                      long_factor=longrope_factors(n, True))
        cfg = AutoConfig.for_model(**kw)
        text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        if "_attn" in shape:  # soft-capping needs the eager path in transformers
            cfg._attn_implementation = shape["_attn"]
        dtype = torch.float32 if tiny else torch.bfloat16
        cfg.torch_dtype = dtype
        if args.config_only:
            cfg.save_pretrained(d)
            with open(os.path.join(d, "tokenizer.json"), "w") as f:
                json.dump(full_vocab_tokenizer(text_cfg.vocab_size), f)
            print(f"{name}: config.json and tokenizer.json written", flush=True)
            continue
        with torch.device("cuda"):
            try:
                model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
            except TypeError:  # transformers < 5
                model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype)
        model.eval()
        if args.one_file:
            model.save_pretrained(d, safe_serialization=True, max_shard_size="1000GB")
        else:
            model.save_pretrained(d, safe_serialization=True)
        if args.tokenizer:
            shutil.copy(args.tokenizer, os.path.join(d, "tokenizer.json"))
        else:
            with open(os.path.join(d, "tokenizer.json"), "w") as f:
                json.dump(full_vocab_tokenizer(text_cfg.vocab_size), f)
        ref = {"prompts": []}
        # _reference=False: a shape too large for its float32 reference on one GPU (made to be timed).
        if not args.no_reference and shape.get("_reference", True):
            g = torch.Generator().manual_seed(1)
            prompts = [torch.randint(0, text_cfg.vocab_size, (n,), generator=g).tolist() for n in prompt_lens]
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            with torch.no_grad():
                # (tiny models are float32 already: their "bf16" logits are float32 too; CPU tests ignore them)
                bf16 = [model(torch.tensor([p], device="cuda")).logits[0, -1].float().cpu() for p in prompts]
                model = model.float()  # the same weights, exactly representable in float32
                # Gemma 3's embedding scale is a non-persistent buffer made while the bf16 model was
                # built (torch.tensor(sqrt(hidden)) under the bf16 default dtype: 50.5 for 2,560, not
                # 50.596); .float() keeps the rounded value, so the float32 reference would not be what
                # transformers computes for this checkpoint loaded in float32. Set it as loading does.
                for mod in model.modules():
                    if isinstance(getattr(mod, "embed_scale", None), torch.Tensor):
                        mod.embed_scale = torch.tensor(text_cfg.hidden_size ** 0.5, dtype=torch.float32,
                                                       device=mod.embed_scale.device)
                for p, lb in zip(prompts, bf16):
                    ids = torch.tensor([p], device="cuda")
                    lf = model(ids).logits[0, -1].float().cpu()
                    out = model.generate(ids, max_new_tokens=32, do_sample=False, min_new_tokens=32,
                                         eos_token_id=None, pad_token_id=0)
                    ref["prompts"].append({"ids": p, "last_logits_fp32": lf.tolist(),
                                           "last_logits_bf16": lb.tolist(),
                                           "greedy_ids_fp32": out[0, len(p):].tolist()})
        with open(os.path.join(d, "reference.json"), "w") as f:
            json.dump(ref, f)
        del model
        torch.cuda.empty_cache()
        print(f"{name}: written in {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == "--tokenizer-only":
    # tools/make_random_models.py --tokenizer-only VOCAB OUT.json (no torch needed beyond import)
    json.dump(full_vocab_tokenizer(int(sys.argv[2])), open(sys.argv[3], "w"))
    sys.exit(0)

if __name__ == "__main__":
    sys.exit(main())
