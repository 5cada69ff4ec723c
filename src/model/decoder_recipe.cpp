#include "model/decoder_recipe.h"

#include <cmath>

namespace seam {

namespace {
// x rounded to `dtype` (what a torch scalar tensor of that dtype holds).
float round_to(float x, DType dtype) {
  if (dtype == DType::f32) return x;
  uint16_t bits = 0;
  convert_from_f32(&x, dtype, &bits, 1);
  float out = 0.f;
  convert_to_f32(&bits, dtype, &out, 1);
  return out;
}
}  // namespace

DecoderRecipe decoder_recipe(const ModelConfig& c, DType act) {
  DecoderRecipe r;
  r.activation = c.hidden_act == MlpActivation::gelu_tanh ? Activation::gelu_tanh : Activation::silu;
  r.sandwich_norms = c.gemma_norms;
  r.norm_plus_one = c.gemma_norms;
  if (c.gemma_norms) r.embed_scale = round_to(float(std::sqrt(double(c.hidden_size))), act);
  r.final_logit_softcap = c.final_logit_softcap;

  // transformers: scaling = head_dim ** -0.5 (Gemma: query_pre_attn_scalar ** -0.5).
  double scale = 1.0 / std::sqrt(double(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : c.head_dim));
  const double af = c.rope_scaling.attention_factor;
  if (af != 1.0) {
    if (c.rotary_dim == c.head_dim)
      scale *= af * af;
    else
      r.rotary_rows_factor = float(af);
  }
  r.layers.resize(size_t(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    LayerRecipe& l = r.layers[size_t(i)];
    l.attention.scale = float(scale);
    l.attention.sliding_window = c.window(i);
    l.attention.logit_softcap = c.attn_logit_softcap;
    l.local_rope = c.sliding_layer(i);  // by layer type; identical tables unless the family has a local RoPE (Gemma 3)
  }
  return r;
}

}  // namespace seam
