// Test helper (header-only): a straightforward float64 Llama forward of a (possibly FP8)
// checkpoint, written from the formats' definitions and independent of seam's model, Linear
// and backend code: FP8 weights dequantised from their codes and scale tensors (the scale's
// shape says per-tensor, per-channel or 128x128 blocks), activations quantised as the format
// says (per token, per 1x128 group, or the static input_scale), every sum in double.
// `quantize_online` applies --quantization fp8's per-channel weight quantization to a float
// checkpoint; `quantize_acts = false` gives the plain float reference of the original; `kv_fp8`
// stores K/V as E4M3 (the FP8 KV cache), scaled by the checkpoint's per-layer k/v scales.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/fp8.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace seam::test {

class Fp8Reference {
 public:
  // kv_fp8: K (after RoPE) and V are stored as E4M3 codes of x / scale and read as code * scale
  // (--kv-cache-dtype fp8_e4m3), with the layer's "self_attn.k_proj.k_scale" / "self_attn.k_scale"
  // (v alike) where the checkpoint has one, else 1.
  Fp8Reference(const std::string& dir, bool quantize_online, bool quantize_acts, bool kv_fp8 = false)
      : quantize_acts_(quantize_acts), kv_fp8_(kv_fp8) {
    c_ = load_model_config(dir);
    file_ = SafetensorsFile::open(dir + "/model.safetensors");
    embed_ = floats("model.embed_tokens.weight");
    norm_ = floats("model.norm.weight");
    for (int i = 0; i < c_.n_layers; ++i) {
      const std::string p = "model.layers." + std::to_string(i) + ".";
      Layer l;
      l.ln_in = floats(p + "input_layernorm.weight");
      l.ln_post = floats(p + "post_attention_layernorm.weight");
      l.q = linear(p + "self_attn.q_proj", quantize_online);
      l.k = linear(p + "self_attn.k_proj", quantize_online);
      l.v = linear(p + "self_attn.v_proj", quantize_online);
      l.o = linear(p + "self_attn.o_proj", quantize_online);
      l.g = linear(p + "mlp.gate_proj", quantize_online);
      l.u = linear(p + "mlp.up_proj", quantize_online);
      l.d = linear(p + "mlp.down_proj", quantize_online);
      for (const auto& name : file_->tensor_names()) {
        for (const char* kv : {"k", "v"}) {
          const std::string a = p + "self_attn." + kv + "_proj." + kv + "_scale", b = p + "self_attn." + kv + "_scale";
          if (name == a || name == b) (kv[0] == 'k' ? l.k_scale : l.v_scale) = float(floats(name)[0]);
        }
      }
      layers_.push_back(std::move(l));
    }
    file_.reset();
  }

  // log_softmax of the logits after each position of `ids`: [ids.size()][vocab].
  std::vector<std::vector<double>> log_probs(const std::vector<int32_t>& ids) const {
    const int H = c_.hidden_size, D = c_.head_dim, NH = c_.n_heads, NKV = c_.n_kv_heads, V = c_.vocab_size;
    const size_t T = ids.size();
    std::vector<std::vector<std::vector<double>>> kc(layers_.size()), vc(layers_.size());
    std::vector<std::vector<double>> out;
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> x(embed_.begin() + int64_t(ids[t]) * H, embed_.begin() + int64_t(ids[t] + 1) * H);
      for (size_t li = 0; li < layers_.size(); ++li) {
        const Layer& l = layers_[li];
        std::vector<double> h = rms_norm(x, l.ln_in), q = apply(l.q, h), k = apply(l.k, h), v = apply(l.v, h);
        rope(q, NH, double(t));
        rope(k, NKV, double(t));
        if (kv_fp8_)
          for (auto [kv, sc] : {std::pair{&k, l.k_scale}, std::pair{&v, l.v_scale}})
            for (double& e : *kv) e = double(fp8_e4m3_round(float(e) / sc)) * double(sc);
        kc[li].push_back(k);
        vc[li].push_back(v);
        std::vector<double> attn(size_t(NH * D), 0.0);
        for (int hh = 0; hh < NH; ++hh) {
          const int kvh = hh / (NH / NKV);
          std::vector<double> s(t + 1);
          double mx = -1e300;
          for (size_t j = 0; j <= t; ++j) {
            double dot = 0;
            for (int e = 0; e < D; ++e) dot += q[size_t(hh * D + e)] * kc[li][j][size_t(kvh * D + e)];
            s[j] = dot / std::sqrt(double(D));
            mx = std::max(mx, s[j]);
          }
          double z = 0;
          for (auto& e : s) z += (e = std::exp(e - mx));
          for (size_t j = 0; j <= t; ++j)
            for (int e = 0; e < D; ++e) attn[size_t(hh * D + e)] += s[j] / z * vc[li][j][size_t(kvh * D + e)];
        }
        std::vector<double> o = apply(l.o, attn);
        for (int e = 0; e < H; ++e) x[size_t(e)] += o[size_t(e)];
        std::vector<double> h2 = rms_norm(x, l.ln_post), g = apply(l.g, h2), u = apply(l.u, h2);
        for (size_t e = 0; e < g.size(); ++e) g[e] = g[e] / (1.0 + std::exp(-g[e])) * u[e];
        std::vector<double> d = apply(l.d, g);
        for (int e = 0; e < H; ++e) x[size_t(e)] += d[size_t(e)];
      }
      std::vector<double> h = rms_norm(x, norm_);
      std::vector<double> logits(static_cast<size_t>(V));
      double mx = -1e300;
      for (int vv = 0; vv < V; ++vv) {  // the tied head, unquantized
        double dot = 0;
        for (int e = 0; e < H; ++e) dot += h[size_t(e)] * embed_[size_t(vv * H + e)];
        logits[size_t(vv)] = dot;
        mx = std::max(mx, dot);
      }
      double z = 0;
      for (double lg : logits) z += std::exp(lg - mx);
      for (double& lg : logits) lg = lg - mx - std::log(z);
      out.push_back(std::move(logits));
    }
    return out;
  }

 private:
  enum class Act { none, token, group128, fixed };
  struct Lin {
    int64_t n_out = 0, n_in = 0;
    std::vector<double> w;  // dequantised [n_out, n_in]
    Act act = Act::none;
    float input_scale = 0.f, ub = 0.f;
  };
  struct Layer {
    std::vector<double> ln_in, ln_post;
    Lin q, k, v, o, g, u, d;
    float k_scale = 1.f, v_scale = 1.f;  // the FP8 KV cache's
  };

  std::vector<double> floats(const std::string& name) const {
    HostTensor t = file_->tensor(name);
    std::vector<float> f(size_t(t.numel()));
    convert_to_f32(t.data, t.dtype, f.data(), f.size());
    return std::vector<double>(f.begin(), f.end());
  }

  Lin linear(const std::string& module, bool quantize_online) const {
    HostTensor t = file_->tensor(module + ".weight");
    Lin l;
    l.n_out = t.shape[0];
    l.n_in = t.shape[1];
    l.w.resize(size_t(l.n_out * l.n_in));
    const QuantConfig& qc = c_.quant;
    if (t.dtype == DType::fp8_e4m3) {
      const std::vector<double> s = floats(module + "." + qc.weight_scale_name);
      const auto* codes = static_cast<const uint8_t*>(t.data);
      const int64_t nkb = (l.n_in + 127) / 128;
      for (int64_t o = 0; o < l.n_out; ++o)
        for (int64_t k = 0; k < l.n_in; ++k) {
          const double sc = s.size() == 1 ? s[0] : int64_t(s.size()) == l.n_out ? s[size_t(o)] : s[size_t(o / 128 * nkb + k / 128)];
          l.w[size_t(o * l.n_in + k)] = double(fp8_e4m3_to_f32(codes[o * l.n_in + k])) * sc;
        }
      l.act = qc.weight_only                                ? Act::none  // W8A16: float activations
              : qc.act == Fp8ActScheme::dynamic_group128 ? Act::group128
              : qc.act == Fp8ActScheme::static_per_tensor ? Act::fixed
                                                          : Act::token;
      if (l.act == Act::fixed) l.input_scale = float(floats(module + ".input_scale")[0]);
      l.ub = qc.act_amax_ub;
    } else {
      const std::vector<double> w = floats(module + ".weight");
      if (quantize_online) {  // per output channel: s = amax / 448 in float32, codes e4m3(w / s)
        for (int64_t o = 0; o < l.n_out; ++o) {
          float amax = 0.f;
          for (int64_t k = 0; k < l.n_in; ++k) amax = std::max(amax, std::fabs(float(w[size_t(o * l.n_in + k)])));
          const float s = amax > 0.f ? amax / 448.f : 1.f;
          for (int64_t k = 0; k < l.n_in; ++k)
            l.w[size_t(o * l.n_in + k)] =
                double(fp8_e4m3_to_f32(f32_to_fp8_e4m3(float(w[size_t(o * l.n_in + k)]) / s))) * s;
        }
        l.act = Act::token;
      } else {
        l.w = w;
      }
    }
    if (!quantize_acts_) l.act = Act::none;
    return l;
  }

  // The activations as the format quantises them (float32 scale and quotient, as defined).
  std::vector<double> quantize(const Lin& l, const std::vector<double>& x) const {
    if (l.act == Act::none) return x;
    const int64_t width = l.act == Act::group128 ? 128 : l.n_in;
    std::vector<double> out(x.size());
    for (int64_t b = 0; b < l.n_in; b += width) {
      const int64_t e = std::min(l.n_in, b + width);
      float s = l.input_scale;
      if (l.act != Act::fixed) {
        float amax = 0.f;
        for (int64_t k = b; k < e; ++k) amax = std::max(amax, std::fabs(float(x[size_t(k)])));
        if (l.ub > 0.f) amax = std::min(amax, l.ub);
        s = amax > 0.f ? amax / 448.f : 1.f;
      }
      for (int64_t k = b; k < e; ++k) out[size_t(k)] = double(fp8_e4m3_round(float(x[size_t(k)]) / s)) * s;
    }
    return out;
  }

  std::vector<double> apply(const Lin& l, const std::vector<double>& x) const {
    const std::vector<double> xq = quantize(l, x);
    std::vector<double> y(size_t(l.n_out), 0.0);
    for (int64_t o = 0; o < l.n_out; ++o)
      for (int64_t k = 0; k < l.n_in; ++k) y[size_t(o)] += xq[size_t(k)] * l.w[size_t(o * l.n_in + k)];
    return y;
  }

  std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double r = 1.0 / std::sqrt(ss / double(x.size()) + double(c_.rms_norm_eps));
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * r * w[i];
    return out;
  }

  // HF rotate_half: pairs (i, i + d/2), inv_freq[i] = theta^(-2i/d) (no rope scaling here).
  void rope(std::vector<double>& v, int n_heads, double pos) const {
    const int D = c_.head_dim;
    for (int h = 0; h < n_heads; ++h)
      for (int i = 0; i < D / 2; ++i) {
        const double a = pos * std::pow(double(c_.rope_theta), -2.0 * i / D);
        double& x0 = v[size_t(h * D + i)];
        double& x1 = v[size_t(h * D + i + D / 2)];
        const double r0 = x0 * std::cos(a) - x1 * std::sin(a), r1 = x1 * std::cos(a) + x0 * std::sin(a);
        x0 = r0;
        x1 = r1;
      }
  }

  ModelConfig c_;
  bool quantize_acts_, kv_fp8_;
  std::unique_ptr<SafetensorsFile> file_;
  std::vector<double> embed_, norm_;
  std::vector<Layer> layers_;
};

}  // namespace seam::test
