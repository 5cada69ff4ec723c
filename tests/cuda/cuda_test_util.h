// Helpers of the CUDA backend tests: a fixture that owns a CudaBackend (skipping
// the test when no GPU is visible) plus the CPU reference, typed upload/download,
// random data, NaN poisoning and tolerance checks.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/rope_angle.h"
#include "backend/cuda/cuda_backend.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace seam::test {

inline std::vector<float> random_normal(size_t n, std::mt19937& rng, float scale = 1.f) {
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The values as a tensor of `t` holds them (so the CPU reference sees the device's inputs).
inline std::vector<float> round_to(const std::vector<float>& v, DType t) {
  if (t == DType::f32) return v;
  std::vector<uint16_t> raw(v.size());
  convert_from_f32(v.data(), t, raw.data(), v.size());
  std::vector<float> out(v.size());
  convert_to_f32(raw.data(), t, out.data(), v.size());
  return out;
}

// A CPU f32 view of a host vector.
inline Tensor host_view(std::vector<float>& v, std::initializer_list<int64_t> dims) {
  Tensor t(v.data(), DType::f32, Device::cpu, dims);
  EXPECT_EQ(size_t(t.numel()), v.size());
  return t;
}
// A rotary table in double, base^(-2j / (2 half)) / divisor, split into float hi + lo
// (rope_angle.h), as the model uploads it.
struct HiLoTable {
  std::vector<float> hi, lo;
};
inline HiLoTable hi_lo_table(int64_t half, double base, double divisor = 1.0) {
  std::vector<double> f(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) f[size_t(j)] = std::pow(base, -double(j) / double(half)) / divisor;
  HiLoTable t;
  split_inv_freq(f, t.hi, t.lo);
  return t;
}
template <typename I>
inline Tensor host_index(std::vector<I>& v, std::initializer_list<int64_t> dims) {
  return Tensor(v.data(), sizeof(I) == 8 ? DType::i64 : DType::i32, Device::cpu, dims);
}

inline const char* short_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    default: return "int";
  }
}

struct Tolerance {
  double rtol, atol;
};
// Per-op bounds: f32 kernels differ from the reference only by summation order; bf16/f16
// outputs carry one rounding of the output (2^-9 / 2^-12 relative) plus rounded intermediates.
inline Tolerance tolerance_for(DType t, Tolerance f32 = {1e-5, 1e-6}, Tolerance f16 = {5e-3, 5e-3},
                               Tolerance bf16 = {1.5e-2, 1.5e-2}) {
  return t == DType::f32 ? f32 : t == DType::f16 ? f16 : bf16;
}

// Every element finite (poisoned outputs left NaN fail) and |got - ref| <= atol*scale + rtol*|ref|,
// with scale = max |ref|, so near-zero elements of a wide-ranged output are judged by its magnitude.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& ref, Tolerance tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double scale = 0;
  for (float r : ref) scale = std::max(scale, double(std::fabs(r)));
  size_t n_bad = 0, first_bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(ref[i]));
    const double bound = tol.atol * scale + tol.rtol * std::fabs(ref[i]);
    if (!std::isfinite(got[i]) || err > bound) {
      if (n_bad++ == 0) first_bad = i;
    }
    if (std::isfinite(got[i])) worst = std::max(worst, err / (scale > 0 ? scale : 1));
  }
  EXPECT_EQ(n_bad, 0u) << what << ": " << n_bad << " of " << got.size() << " elements off; first at " << first_bad
                       << " got " << (n_bad ? got[first_bad] : 0.f) << " want " << (n_bad ? ref[first_bad] : 0.f)
                       << " (worst error / max|ref| = " << worst << ")";
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_device_present(&why)) GTEST_SKIP() << "no GPU: " << why;
    gpu = make_cuda_backend(0);
  }
  void TearDown() override {
    if (gpu) {
      gpu->synchronize();
      for (void* p : allocs_) gpu->release(p);
    }
  }

  // A device tensor, poisoned: NaN for floats, -7777 for integers.
  Tensor empty(DType t, std::initializer_list<int64_t> dims) {
    Tensor probe(nullptr, t, Device::cuda, dims);
    void* p = gpu->alloc(std::max<size_t>(probe.nbytes(), 16));
    allocs_.push_back(p);
    Tensor out(p, t, Device::cuda, dims);
    poison(out);
    return out;
  }
  void poison(const Tensor& t) {
    const bool is_int = t.dtype == DType::i32 || t.dtype == DType::i64;
    gpu->fill(t, is_int ? -7777.f : NAN);
  }
  Tensor upload(const std::vector<float>& v, DType t, std::initializer_list<int64_t> dims) {
    Tensor out = empty(t, dims);
    write(out, v);
    return out;
  }
  // v converted to dst's dtype (f32, or a 16-bit type) into dst's memory (contiguous, v.size() elements).
  void write(const Tensor& dst, const std::vector<float>& v) {
    EXPECT_EQ(size_t(dst.numel()), v.size());
    if (dst.dtype == DType::f32) {
      gpu->copy_h2d(dst.data, v.data(), v.size() * 4);
    } else {
      std::vector<uint16_t> raw(v.size());
      convert_from_f32(v.data(), dst.dtype, raw.data(), v.size());
      gpu->copy_h2d(dst.data, raw.data(), raw.size() * 2);
    }
    gpu->synchronize();  // the host vectors may die now
  }
  template <typename I>
  Tensor upload_index(const std::vector<I>& v, std::initializer_list<int64_t> dims) {
    Tensor out = empty(sizeof(I) == 8 ? DType::i64 : DType::i32, dims);
    EXPECT_EQ(size_t(out.numel()), v.size());
    gpu->copy_h2d(out.data, v.data(), v.size() * sizeof(I));
    gpu->synchronize();
    return out;
  }
  // A contiguous tensor (or the buffer under a view: pass the base) as floats.
  std::vector<float> download(const Tensor& t) {
    std::vector<float> out(static_cast<size_t>(t.numel()));
    if (t.dtype == DType::f32) {
      gpu->copy_d2h(out.data(), t.data, out.size() * 4);
      gpu->synchronize();
    } else {
      std::vector<uint16_t> raw(out.size());
      gpu->copy_d2h(raw.data(), t.data, raw.size() * 2);
      gpu->synchronize();
      convert_to_f32(raw.data(), t.dtype, out.data(), out.size());
    }
    return out;
  }
  std::vector<int32_t> download_i32(const Tensor& t) {
    std::vector<int32_t> out(static_cast<size_t>(t.numel()));
    gpu->copy_d2h(out.data(), t.data, out.size() * 4);
    gpu->synchronize();
    return out;
  }

  // The backend's stream, for tests that call a kernel's launcher directly.
  cudaStream_t stream() { return static_cast<cudaStream_t>(cuda_backend_stream(*gpu)); }

  std::unique_ptr<Backend> gpu;
  CpuBackend cpu;
  std::mt19937 rng{1234};

 private:
  std::vector<void*> allocs_;
};

}  // namespace seam::test
