#include "runtime/forward_batch_codec.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"

namespace seam {

namespace {

constexpr uint32_t kVersion = 1;  // bump with any change of the layout below

// Fields in one order for both directions (Io is the writer or the reader).
template <typename Io, typename Batch>
void fields(Io& io, Batch& fb) {
  io.pod(fb.mode);
  io.pod(fb.n_prefill_seqs);
  io.vec(fb.request_ids);
  io.vec(fb.samples);
  io.vec(fb.input_ids);
  io.vec(fb.positions);
  io.vec(fb.out_cache_loc);
  io.vec(fb.qo_indptr);
  io.vec(fb.seq_lens);
  io.vec(fb.req_rows);
  io.vec(fb.draft_index);
  io.vec(fb.sampling);
  io.vec(fb.penalty_indptr);
  io.vec(fb.penalty_tokens);
  io.vec(fb.penalty_counts);
  io.vec(fb.logit_bias_indptr);
  io.vec(fb.logit_bias_tokens);
  io.vec(fb.logit_bias_values);
  io.vec(fb.prompt_lp_token);
  io.vec(fb.prompt_lp_target);
  io.vec(fb.prompt_lp_k);
  io.vec(fb.prompt_lp_seq);
  io.vec(fb.mask_rows);
  io.vec(fb.page_table_writes);
  io.vec(fb.page_table_slots);
}

struct Writer {
  std::string out;
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod(uint64_t(v.size()));
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
};

struct Reader {
  const std::string& in;
  size_t at = 0;
  void take(void* dst, size_t n) {
    SEAM_CHECK(at + n <= in.size(), "a tensor-parallel step message is truncated (", in.size(), " bytes)");
    if (n > 0) std::memcpy(dst, in.data() + at, n);  // an empty vector's data() may be null: memcpy's UB
    at += n;
  }
  template <typename T>
  void pod(T& v) {
    take(&v, sizeof v);
  }
  template <typename T>
  void vec(std::vector<T>& v) {
    uint64_t n = 0;
    pod(n);
    SEAM_CHECK(n <= (in.size() - at) / std::max<size_t>(sizeof(T), 1), "a tensor-parallel step message is corrupt");
    v.resize(size_t(n));
    take(v.data(), size_t(n) * sizeof(T));
  }
};

}  // namespace

std::string encode_forward_batch(const ForwardBatch& fb) {
  Writer w;
  w.pod(kVersion);
  fields(w, fb);
  return std::move(w.out);
}

ForwardBatch decode_forward_batch(const std::string& bytes) {
  Reader r{bytes};
  uint32_t version = 0;
  r.pod(version);
  SEAM_CHECK(version == kVersion, "a tensor-parallel step message of version ", version, " (this build reads ",
             kVersion, "): every node must run the same seam");
  ForwardBatch fb;
  fields(r, fb);
  SEAM_CHECK(r.at == bytes.size(), "a tensor-parallel step message has ", bytes.size() - r.at, " trailing bytes");
  if (!fb.mask_rows.empty())
    fb.fill_mask = [](int, uint32_t* words, int n_words) { std::fill_n(words, n_words, ~0u); };
  return fb;
}

}  // namespace seam
