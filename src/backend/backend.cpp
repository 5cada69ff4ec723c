// The Backend interface's out-of-line parts: the checks its default (composed) ops share with
// the backends' own implementations.
#include "backend/backend.h"

#include <algorithm>
#include <vector>

#include "backend/communicator.h"
#include "backend/op_checks.h"

namespace seam {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::silu: return "silu";
    case Activation::gelu_tanh: return "gelu_tanh";
  }
  return "unknown";
}

void Backend::check_rms_norm_qkv_rope_store(const Tensor& qkv, const Tensor& normed, const Tensor& x,
                                            const Tensor& norm_weight, const Tensor& w_qkv, const Tensor& b_qkv,
                                            const RopeStoreArgs& r) const {
  op_checks::rms_norm_qkv_rope_store(qkv, normed, x, norm_weight, w_qkv, b_qkv, r, device());
}

// A backend without its own collectives: none (the CPU and CUDA backends override both).
void Backend::all_reduce_sum(Tensor) {
  throw Error(detail::concat("the ", name(), " backend has no tensor-parallel collectives"));
}

void Backend::all_gather_cols(Tensor, Tensor, Tensor) {
  throw Error(detail::concat("the ", name(), " backend has no tensor-parallel collectives"));
}

void Backend::embedding_shard(Tensor, Tensor, Tensor, int64_t) {
  throw Error(detail::concat("the ", name(), " backend has no vocabulary-parallel embedding"));
}

void Backend::fill_random(Tensor t, const RandomFill& f) {
  SEAM_CHECK(t.contiguous() && (t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16),
             "fill_random: tensor must be contiguous f32/f16/bf16");
  // In chunks, so a large weight needs no host copy of its own size.
  constexpr int64_t kChunk = int64_t(1) << 20;
  const size_t esize = dtype_size(t.dtype);
  std::vector<float> values(size_t(std::min(kChunk, t.numel())));
  std::vector<uint8_t> converted(values.size() * esize);
  for (int64_t at = 0; at < t.numel(); at += kChunk) {
    const int64_t n = std::min(kChunk, t.numel() - at);
    RandomFill part = f;
    part.first += at;
    random_fill_host(part, values.data(), n);
    convert_from_f32(values.data(), t.dtype, converted.data(), size_t(n));
    copy_h2d(static_cast<uint8_t*>(t.data) + size_t(at) * esize, converted.data(), size_t(n) * esize);
    synchronize();  // `converted` is reused by the next chunk
  }
}

}  // namespace seam
