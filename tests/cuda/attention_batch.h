// The paged-attention tests' batch (cuda_attention_fixture.h, cuda_fp8_kv_test.cpp): the head
// shape, the sequences, and their layout as the runtime lays a batch out (prefill sequences
// first, then decode rows): token ranges, lengths, rows of a page table scattered through it and
// KV slots scattered through the caches, drawn from the test's rng in one fixed order.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace seam::test {

struct Shape {
  int64_t heads, kv_heads, d;
};
struct Seq {
  int n_new;   // new tokens (1 for a decode row)
  int prefix;  // cached tokens before them
};

struct PagedBatch {
  int n_seqs = 0, n_tokens = 0, max_len = 0, n_prefill_tokens = 0;
  int64_t max_reqs = 0, max_ctx = 0, n_slots = 0;
  std::vector<int32_t> indptr, seq_lens, req_rows;  // [n_seqs + 1], [n_seqs], [n_seqs]
  std::vector<int32_t> page_table;                  // [max_reqs, max_ctx], -1 where unused
};

// The first n_prefill_seqs of seqs are prefill sequences (their tokens count in n_prefill_tokens).
// Requests live in scattered rows of the page table; their KV in scattered slots.
inline PagedBatch paged_batch(const std::vector<Seq>& seqs, int n_prefill_seqs, std::mt19937& rng) {
  PagedBatch b;
  b.n_seqs = int(seqs.size());
  b.indptr = {0};
  int total_ctx = 0;
  for (int s = 0; s < b.n_seqs; ++s) {
    b.indptr.push_back(b.indptr.back() + seqs[size_t(s)].n_new);
    b.seq_lens.push_back(seqs[size_t(s)].n_new + seqs[size_t(s)].prefix);
    b.max_len = std::max(b.max_len, b.seq_lens.back());
    total_ctx += b.seq_lens.back();
    if (s < n_prefill_seqs) b.n_prefill_tokens += seqs[size_t(s)].n_new;
  }
  b.n_tokens = b.indptr.back();
  b.max_reqs = b.n_seqs + 3;
  b.max_ctx = b.max_len + 5;
  b.n_slots = total_ctx + 40;
  std::vector<int32_t> rows(static_cast<size_t>(b.max_reqs));
  std::iota(rows.begin(), rows.end(), 0);
  std::shuffle(rows.begin(), rows.end(), rng);
  b.req_rows.assign(rows.begin(), rows.begin() + b.n_seqs);
  std::vector<int32_t> perm(static_cast<size_t>(b.n_slots));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  b.page_table.assign(size_t(b.max_reqs * b.max_ctx), -1);
  size_t next = 0;
  for (int s = 0; s < b.n_seqs; ++s)
    for (int p = 0; p < b.seq_lens[size_t(s)]; ++p)
      b.page_table[size_t(b.req_rows[size_t(s)] * b.max_ctx + p)] = perm[next++];
  return b;
}

}  // namespace seam::test
