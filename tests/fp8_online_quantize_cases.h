// The online FP8 quantization (--quantization fp8) on a backend against its definition: the
// parts a fused layer can be made of (random dummy tensors, a row view of one, bf16 / f16 / f32
// mapped data with an all-zero row and values that saturate), quantized by quantize_parts_fp8
// and by Linear::load_fp8 on the backend, must give the codes and scales of core/fp8.h's
// quantize_fp8_per_channel of the parts' float32 values, bit for bit. Shared by the CPU test
// (fp8_online_quantize_test.cpp) and the CUDA one (cuda/cuda_fp8_online_quantize_test.cpp).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/fp8.h"
#include "model/fp8_linear.h"

namespace seam::test {

// A layer's parts, all [rows_i, n_in], with the storage of the mapped ones.
struct Fp8OnlineParts {
  int64_t n_in = 0;
  std::vector<HostTensor> tensors;
  std::vector<std::vector<uint16_t>> half_data;
  std::vector<std::vector<float>> f32_data;

  std::vector<const HostTensor*> parts() const {
    std::vector<const HostTensor*> out;
    for (const HostTensor& t : tensors) out.push_back(&t);
    return out;
  }
  int64_t n_out() const {
    int64_t n = 0;
    for (const HostTensor& t : tensors) n += t.shape[0];
    return n;
  }
  // A dummy weight's description (--load-format dummy's ranges: ±sqrt(3 / cols)).
  void add_random(int64_t rows, uint64_t seed, int64_t first_row = 0) {
    HostTensor t;
    t.name = "random" + std::to_string(seed);
    t.shape = {first_row + rows, n_in};
    t.random = true;
    t.fill = RandomFill{seed, 0, std::sqrt(3.f / float(n_in)), 0.f};
    tensors.push_back(first_row > 0 ? t.rows(first_row, rows) : t);
  }
  // Mapped data in `dtype` (f32, f16 or bf16): normal values, row 1 all zero, row 2 with an
  // outlier (its other values quantize to small codes and subnormals) and, in f32, a row whose
  // values sit at rounding ties of the E4M3 grid after the division.
  void add_mapped(int64_t rows, DType dtype, std::mt19937& rng) {
    std::normal_distribution<float> dist(0.f, 0.05f);
    std::vector<float> v(size_t(rows * n_in));
    for (auto& x : v) x = dist(rng);
    if (rows > 1) std::fill_n(v.begin() + n_in, n_in, 0.f);
    if (rows > 2) v[size_t(2 * n_in + 3)] = 300.f;
    if (rows > 3 && dtype == DType::f32)
      for (int64_t k = 0; k < n_in; ++k) v[size_t(3 * n_in + k)] = (k == 0 ? 448.f : (k % 16) * 0.5f + 0.25f);
    HostTensor t;
    t.name = std::string("mapped_") + dtype_name(dtype);
    t.dtype = dtype;
    t.shape = {rows, n_in};
    if (dtype == DType::f32) {
      f32_data.push_back(std::move(v));
      t.data = f32_data.back().data();
    } else {
      half_data.emplace_back(v.size());
      convert_from_f32(v.data(), dtype, half_data.back().data(), v.size());
      t.data = half_data.back().data();
    }
    tensors.push_back(t);
  }

  // The definition: the parts' float32 values, quantized per row.
  void reference(std::vector<uint8_t>& codes, std::vector<float>& scales) const {
    std::vector<float> f32(size_t(n_out() * n_in));
    int64_t at = 0;
    for (const HostTensor& t : tensors) {
      t.to_f32(f32.data() + at);
      at += t.numel();
    }
    codes.resize(f32.size());
    scales.resize(size_t(n_out()));
    quantize_fp8_per_channel(f32.data(), n_out(), n_in, codes.data(), scales.data());
  }
};

// (The mapped parts' data pointers stay valid as the vectors grow or move: an inner vector's
// buffer keeps its address.)
inline Fp8OnlineParts fp8_online_parts(int64_t n_in, std::mt19937& rng) {
  Fp8OnlineParts p;
  p.n_in = n_in;
  p.add_random(37, 11);
  p.add_random(9, 12, /*first_row=*/5);  // a row view of a random tensor: its stream starts later
  p.add_mapped(5, DType::bf16, rng);
  p.add_mapped(4, DType::f32, rng);
  p.add_mapped(3, DType::f16, rng);
  return p;
}

inline std::vector<uint8_t> download_bytes(Backend& b, const Tensor& t) {
  std::vector<uint8_t> out(t.nbytes());
  b.copy_d2h(out.data(), t.data, out.size());
  b.synchronize();
  return out;
}

// Codes equal byte for byte, scales bit for bit; the first differences named.
inline void expect_fp8_rows_equal(const std::vector<uint8_t>& codes, const std::vector<uint8_t>& scale_bytes,
                                  const std::vector<uint8_t>& want_codes, const std::vector<float>& want_scales,
                                  int64_t n_in, const std::string& what) {
  ASSERT_EQ(codes.size(), want_codes.size()) << what;
  ASSERT_EQ(scale_bytes.size(), want_scales.size() * sizeof(float)) << what;
  std::vector<float> scales(want_scales.size());
  std::memcpy(scales.data(), scale_bytes.data(), scale_bytes.size());
  int n_bad = 0;
  for (size_t o = 0; o < scales.size(); ++o) {
    uint32_t a, b;
    std::memcpy(&a, &scales[o], 4);
    std::memcpy(&b, &want_scales[o], 4);
    if (a != b && n_bad++ < 5) ADD_FAILURE() << what << ": scale of row " << o << " " << scales[o] << " want " << want_scales[o];
  }
  for (size_t i = 0; i < codes.size(); ++i)
    if (codes[i] != want_codes[i] && n_bad++ < 10)
      ADD_FAILURE() << what << ": code [" << i / size_t(n_in) << ", " << i % size_t(n_in) << "] 0x" << std::hex
                    << int(codes[i]) << " want 0x" << int(want_codes[i]) << std::dec;
  EXPECT_EQ(n_bad, 0) << what;
}

// quantize_parts_fp8 with `stage_elements` on `b` against the definition.
inline void check_quantize_parts(Backend& b, const Fp8OnlineParts& p, int64_t stage_elements, const std::string& what) {
  std::vector<uint8_t> want_codes;
  std::vector<float> want_scales;
  p.reference(want_codes, want_scales);
  void* c = b.alloc(want_codes.size());
  void* s = b.alloc(want_scales.size() * sizeof(float));
  const Tensor codes(c, DType::fp8_e4m3, b.device(), {p.n_out(), p.n_in});
  const Tensor scales(s, DType::f32, b.device(), {p.n_out()});
  b.fill(scales, NAN);
  quantize_parts_fp8(b, p.parts(), codes, scales, stage_elements);
  expect_fp8_rows_equal(download_bytes(b, codes), download_bytes(b, scales), want_codes, want_scales, p.n_in, what);
  b.release(c);
  b.release(s);
}

// Linear::load_fp8 under --quantization fp8 on `b`: its weight and scales against the definition.
inline void check_linear_load(Backend& b, const Fp8OnlineParts& p, const std::string& what) {
  std::vector<uint8_t> want_codes;
  std::vector<float> want_scales;
  p.reference(want_codes, want_scales);
  QuantConfig q;
  q.method = QuantMethod::online_fp8;
  q.weight = Fp8WeightScheme::per_channel;
  q.act = Fp8ActScheme::dynamic_per_token;
  const Linear l = Linear::load_fp8(b, p.parts(), {}, {}, q, DType::bf16);
  ASSERT_TRUE(l.is_fp8()) << what;
  EXPECT_EQ(l.fp8().w_scheme, Fp8WeightScheme::per_channel) << what;
  EXPECT_EQ(l.out_features(), p.n_out()) << what;
  EXPECT_EQ(l.in_features(), p.n_in) << what;
  expect_fp8_rows_equal(download_bytes(b, l.fp8().w), download_bytes(b, l.fp8().w_scale), want_codes, want_scales,
                        p.n_in, what);
}

}  // namespace seam::test
