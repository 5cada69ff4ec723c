#include "model/fp8_linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp8.h"
#include "model/fp8_checkpoint.h"
#include "model/fp8_dequant.h"
#include "model/weight_folds.h"

namespace seam {

namespace {

std::vector<float> scale_values(const HostTensor& t) {
  std::vector<float> v(size_t(t.numel()));
  convert_to_f32(t.data, t.dtype, v.data(), v.size());
  return v;
}

// A host staging view for DeviceWeight::upload.
HostTensor staged(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data) {
  HostTensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = data;
  return t;
}

// Weight-only FP8 (QuantConfig::weight_only): each part dequantized into float32 values
// (fp8_dequant.h's definition), its fold applied to those values as to any float weight's
// (model/weight_folds.h: value * factor in float32), then rounded once to the dense format's
// dtype and the layer loaded dense. One part is held in float32 at a time: the layer's host
// staging is its size in the dense dtype (a float checkpoint's bytes), plus one part.
Linear load_weight_only(Backend& backend, const std::vector<const HostTensor*>& parts,
                        const std::vector<const HostTensor*>& bias_parts, WeightFormat dense, const QuantConfig& quant,
                        const Checkpoint& ck, const std::vector<Linear::RowFold>& folds) {
  SEAM_ASSERT(folds.empty() || folds.size() == parts.size());
  const DType dtype = weight_format_dtype(dense);
  const size_t esize = dtype_size(dtype);
  std::vector<std::vector<uint8_t>> values(parts.size());
  std::vector<HostTensor> views(parts.size());
  std::vector<const HostTensor*> ptrs;
  std::vector<float> f32;
  for (size_t i = 0; i < parts.size(); ++i) {
    const HostTensor& p = *parts[i];
    auto it = ck.fp8_scales.find(p.name);
    SEAM_ASSERT(it != ck.fp8_scales.end(), "no FP8 scales for ", p.name);
    const int64_t n_out = p.shape[0], n_in = p.shape[1];
    const size_t n = size_t(n_out * n_in);
    f32.resize(n);
    dequantize_fp8_weight(p, it->second, quant.weight, DType::f32, f32.data());
    if (!folds.empty() && folds[i].active())
      scale_periodic_rows(f32.data(), n_out, n_in, folds[i].period, folds[i].count, folds[i].factor);
    values[i].resize(n * esize);
    convert_from_f32(f32.data(), dtype, values[i].data(), n);  // DeviceWeight::upload's rounding
    views[i] = staged(p.name, dtype, {n_out, n_in}, values[i].data());
    ptrs.push_back(&views[i]);
  }
  return Linear::load(backend, ptrs, bias_parts, dense);
}

}  // namespace

void quantize_parts_fp8(Backend& backend, const std::vector<const HostTensor*>& parts, Tensor codes, Tensor scales,
                        int64_t stage_elements) {
  const int64_t n_in = codes.size(1);
  const int64_t chunk_rows = std::max<int64_t>(1, stage_elements / std::max<int64_t>(1, n_in));
  int64_t max_rows = 0;
  for (const HostTensor* p : parts) max_rows = std::max(max_rows, p->shape[0]);
  const int64_t stage_rows = std::min(chunk_rows, max_rows);
  if (stage_rows == 0 || n_in == 0) return;
  void* stage = backend.alloc(size_t(stage_rows * n_in) * sizeof(float));  // room for f32, the widest dtype
  std::vector<float> host_f32;  // a part in a dtype the device op does not read (none today)
  int64_t row = 0;
  try {
    for (const HostTensor* p : parts) {
      for (int64_t r = 0; r < p->shape[0]; r += stage_rows) {
        const int64_t n = std::min(stage_rows, p->shape[0] - r);
        const HostTensor chunk = p->rows(r, n);
        Tensor w;
        if (chunk.random) {  // float32, the stream's own values (HostTensor::to_f32's bits)
          w = Tensor(stage, DType::f32, backend.device(), {n, n_in});
          backend.fill_random(w, chunk.fill);
        } else if (chunk.dtype == DType::f32 || chunk.dtype == DType::f16 || chunk.dtype == DType::bf16) {
          w = Tensor(stage, chunk.dtype, backend.device(), {n, n_in});
          backend.copy_h2d(stage, chunk.data, w.nbytes());  // the mapping outlives the copy
        } else {
          host_f32.resize(size_t(n * n_in));
          chunk.to_f32(host_f32.data());
          w = Tensor(stage, DType::f32, backend.device(), {n, n_in});
          backend.copy_h2d(stage, host_f32.data(), w.nbytes());
          backend.synchronize();  // host_f32 is reused by the next chunk
        }
        backend.quantize_fp8_per_channel(codes.slice_rows(row + r, n), scales.slice_rows(row + r, n), w);
      }
      row += p->shape[0];
    }
    backend.synchronize();  // the stage is released below
  } catch (...) {
    backend.release(stage);
    throw;
  }
  backend.release(stage);
}

std::vector<float> compact_block_scales(const float* row_scales, int64_t n_out, int64_t n_kb) {
  const int64_t n_rb = (n_out + kFp8Group - 1) / kFp8Group;
  std::vector<float> blocks(size_t(n_rb * n_kb));
  for (int64_t rb = 0; rb < n_rb; ++rb) {
    const float* first = row_scales + rb * kFp8Group * n_kb;
    for (int64_t r = rb * kFp8Group + 1; r < std::min(n_out, (rb + 1) * kFp8Group); ++r)
      if (std::memcmp(row_scales + r * n_kb, first, size_t(n_kb) * sizeof(float)) != 0) return {};
    std::memcpy(blocks.data() + rb * n_kb, first, size_t(n_kb) * sizeof(float));
  }
  return blocks;
}

Linear load_linear(Backend& backend, const std::vector<const HostTensor*>& weight_parts,
                   const std::vector<const HostTensor*>& bias_parts, WeightFormat dense, const QuantConfig& quant,
                   const Checkpoint& ck, const std::vector<Linear::RowFold>& folds) {
  size_t n_fp8 = 0;
  for (const HostTensor* p : weight_parts) n_fp8 += fp8_linear_weight(quant, *p) ? 1 : 0;
  if (n_fp8 == 0) return Linear::load(backend, weight_parts, bias_parts, dense);
  SEAM_CHECK(n_fp8 == weight_parts.size(), "'", weight_parts[0]->name, "' and the layers fused with it (",
             weight_parts.size(), " parts) must be all FP8 or all unquantized: they run as one GEMM (",
             quant.source, ")");
  if (quant.weight_only) return load_weight_only(backend, weight_parts, bias_parts, dense, quant, ck, folds);
  SEAM_CHECK(backend.supports_fp8(), "FP8 weights (", quant_method_name(quant.method), "): the ", backend.name(),
             " backend has no FP8 linear yet");
  std::vector<const Fp8Scales*> scales;
  if (quant.serialized()) {
    for (const HostTensor* p : weight_parts) {
      auto it = ck.fp8_scales.find(p->name);
      SEAM_ASSERT(it != ck.fp8_scales.end(), "no FP8 scales for ", p->name);
      scales.push_back(&it->second);
    }
  }
  // Folds act on a serialized checkpoint's scales; float parts (dense, or quantized online) come
  // with their values folded by the caller.
  return Linear::load_fp8(backend, weight_parts, bias_parts, scales, quant, weight_format_dtype(dense),
                          quant.serialized() ? folds : std::vector<Linear::RowFold>{});
}

Linear Linear::load_fp8(Backend& backend, const std::vector<const HostTensor*>& parts,
                        const std::vector<const HostTensor*>& bias_parts, const std::vector<const Fp8Scales*>& scales,
                        const QuantConfig& quant, DType act, const std::vector<RowFold>& folds) {
  SEAM_ASSERT(!parts.empty() && (scales.empty() || scales.size() == parts.size()));
  SEAM_ASSERT(folds.empty() || (folds.size() == parts.size() && !scales.empty()));
  const int64_t n_in = parts[0]->shape[1];
  int64_t n_out = 0;
  for (const HostTensor* p : parts) n_out += p->shape[0];
  const int64_t n_kb = (n_in + kFp8Group - 1) / kFp8Group;

  std::vector<uint8_t> codes;   // [n_out, n_in], a serialized checkpoint's (the online path writes the device)
  std::vector<float> w_scale;   // by scheme, see Fp8Weight
  Fp8WeightScheme scheme = quant.weight;
  float input_scale = 0.f;
  Linear l;
  if (scales.empty()) {  // online: float parts, quantized per output channel on the device
    l.weight_ = DeviceWeight::allocate(backend, DType::fp8_e4m3, {n_out, n_in});
    l.w_scale_ = DeviceWeight::allocate(backend, DType::f32, {n_out});
    quantize_parts_fp8(backend, parts, l.weight_.tensor(), l.w_scale_.tensor());
    scheme = Fp8WeightScheme::per_channel;
  } else {
    codes.resize(size_t(n_out * n_in));
    int64_t row = 0;
    std::vector<std::vector<float>> part_scales;
    for (size_t i = 0; i < parts.size(); ++i) {
      std::memcpy(codes.data() + row * n_in, parts[i]->data, size_t(parts[i]->numel()));
      row += parts[i]->shape[0];
      part_scales.push_back(scale_values(scales[i]->weight_scale));
      if (scales[i]->input_scale.defined()) input_scale = std::max(input_scale, scale_values(scales[i]->input_scale)[0]);
    }
    // A part's rows are rows [row_offset, row_offset + rows) of its stored tensor (a fused
    // Phi-3 qkv_proj / gate_up_proj split at load): its scales are looked up there.
    if (scheme == Fp8WeightScheme::per_tensor) {
      // Per-tensor weights are stored per-channel (each row keeps its part's scale: exact). The
      // GPU's tensor-core GEMM then always runs cuBLASLt's OUTER_VEC_32F mode: its SCALAR_32F
      // mode missed the float32 bound on the H200 (5.4e-4 of max|ref| at K = 256), and it cannot
      // take per-token activation scales at all.
      scheme = Fp8WeightScheme::per_channel;
      for (size_t i = 0; i < parts.size(); ++i) w_scale.insert(w_scale.end(), size_t(parts[i]->shape[0]), part_scales[i][0]);
    } else if (scheme == Fp8WeightScheme::per_channel) {
      for (size_t i = 0; i < parts.size(); ++i) {
        const auto first = part_scales[i].begin() + parts[i]->row_offset;
        SEAM_ASSERT(parts[i]->row_offset + parts[i]->shape[0] <= int64_t(part_scales[i].size()), parts[i]->name);
        w_scale.insert(w_scale.end(), first, first + parts[i]->shape[0]);
      }
    } else {  // block128: [ceil(rows/128), n_kb] per stored tensor -> [rows, n_kb]
      for (size_t i = 0; i < parts.size(); ++i)
        for (int64_t r = parts[i]->row_offset; r < parts[i]->row_offset + parts[i]->shape[0]; ++r) {
          SEAM_ASSERT((r / kFp8Group + 1) * n_kb <= int64_t(part_scales[i].size()), parts[i]->name);
          const float* src = part_scales[i].data() + (r / kFp8Group) * n_kb;
          w_scale.insert(w_scale.end(), src, src + n_kb);
        }
    }
    // Load-time row folds act on the rows' scales (per-channel now, per-tensor included).
    int64_t first_row = 0;
    for (size_t i = 0; i < folds.size(); ++i) {
      const RowFold& f = folds[i];
      if (f.active()) {
        SEAM_CHECK(scheme == Fp8WeightScheme::per_channel, "'", parts[i]->name,
                   "': LongRoPE's partial-rotary factor cannot be folded into 128x128 block scales (rows with and "
                   "without it share a block); load the float checkpoint with --quantization fp8");
        SEAM_ASSERT(f.period > 0 && f.count <= f.period);
        for (int64_t r = 0; r < parts[i]->shape[0]; ++r)
          if (r % f.period < f.count) w_scale[size_t(first_row + r)] *= f.factor;
      }
      first_row += parts[i]->shape[0];
    }
  }

  l.backend_ = &backend;
  l.format_ = WeightFormat::fp8_e4m3;
  if (!scales.empty()) {
    const HostTensor w_host = staged(parts[0]->name, DType::fp8_e4m3, {n_out, n_in}, codes.data());
    l.weight_ = DeviceWeight::upload(backend, {&w_host}, DType::fp8_e4m3);
    const HostTensor s_host =
        scheme == Fp8WeightScheme::block128
            ? staged("w_scale", DType::f32, {n_out, n_kb}, w_scale.data())
            : staged("w_scale", DType::f32, {int64_t(w_scale.size())}, w_scale.data());
    l.w_scale_ = DeviceWeight::upload(backend, {&s_host}, DType::f32);
  }
  if (!bias_parts.empty()) l.bias_ = DeviceWeight::upload(backend, bias_parts, act);
  if (scheme == Fp8WeightScheme::block128) {
    const std::vector<float> blocks = compact_block_scales(w_scale.data(), n_out, n_kb);
    if (!blocks.empty()) {
      const HostTensor b_host = staged("w_scale_blocks", DType::f32, {(n_out + kFp8Group - 1) / kFp8Group, n_kb},
                                       blocks.data());
      l.w_scale_blocks_ = DeviceWeight::upload(backend, {&b_host}, DType::f32);
      l.fp8_.w_scale_blocks = l.w_scale_blocks_.tensor();
    }
  }
  l.fp8_.w = l.weight_.tensor();
  l.fp8_.w_scale = l.w_scale_.tensor();
  l.fp8_.w_scheme = scheme;
  l.fp8_.act = quant.act;
  l.fp8_.act_amax_ub = quant.act_amax_ub;
  if (quant.act == Fp8ActScheme::static_per_tensor) {
    SEAM_ASSERT(input_scale > 0.f, "static activations without an input_scale");
    l.input_scale_ = DeviceWeight::upload_f32(backend, {input_scale});
    l.fp8_.input_scale = l.input_scale_.tensor();
  }
  return l;
}

}  // namespace seam
