// DecoderRecipe: what a family's decoder layer does differently, decided once from the
// ModelConfig (and the activation dtype) so the forward reads flags, not families.
//
//   Llama / Mistral / Qwen / Phi-3 : x += o(attn(norm(x)));             x += down(silu(gate) * up)(norm(x))
//   Gemma 2 / 3 (sandwich norms)   : x += norm(o(attn(norm(x))));       x += norm(down(gelu_tanh(gate) * up)(norm(x)))
//
// plus, per layer, the attention's scale, sliding window, logit soft-cap and RoPE table.
#pragma once
#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"

namespace seam {

struct LayerRecipe {
  AttentionOptions attention;  // scale, sliding window (0 = full), logit soft-cap (0 = off)
  bool local_rope = false;     // the sliding layers' RoPE table (Gemma 3's local base)
};

struct DecoderRecipe {
  Activation activation = Activation::silu;
  // Gemma: post-attention and pre/post-feed-forward norms; each sublayer's output is normed
  // before it joins the residual (Backend::rms_norm_add).
  bool sandwich_norms = false;
  // Gemma's RMSNorm multiplies by (1 + w): the 1 is folded into every norm weight at load.
  bool norm_plus_one = false;
  // Gemma: the embedding times sqrt(hidden), the factor rounded to the activation dtype as
  // transformers does (torch.tensor(hidden_size ** 0.5, dtype=hidden_states.dtype)); 0 = none.
  float embed_scale = 0.f;
  float final_logit_softcap = 0.f;  // Gemma 2: logits = cap * tanh(logits / cap); 0 = off
  // LongRoPE's attention factor multiplies cos and sin in transformers, i.e. each rotated q and k
  // component. With full rotary it is folded into the attention scale (q.k by its square);
  // with partial rotary the pass-through dims must not be scaled, so it is folded into the
  // rotated rows of the q and k projections at load instead (RoPE is linear). 1 = no fold.
  float rotary_rows_factor = 1.f;
  std::vector<LayerRecipe> layers;  // [n_layers]
};

DecoderRecipe decoder_recipe(const ModelConfig& c, DType act);

}  // namespace seam
