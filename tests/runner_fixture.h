// A ModelRunner on stories260K (cpu backend) with hand-built batches, for
// tests that compare forward paths on identical inputs.
#pragma once
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "kv/kv_pool.h"
#include "model/checkpoint.h"
#include "model/llama_model.h"
#include "runtime/model_runner.h"
#include "test_util.h"

namespace seam::test {

struct SeqSpec {
  int n_prefix;  // positions already in the KV cache
  int n_new;     // tokens fed this step
};

class RunnerFixture {
 public:
  explicit RunnerFixture(const GraphConfig& graphs, int max_tokens = 512, int max_seqs = 64) {
    config = load_model_config(stories_dir());
    auto ckpt = Checkpoint::open(stories_dir(), config);
    model = std::make_unique<LlamaModel>(backend, config, *ckpt, DType::f32);
    KvPoolShape shape{config.n_layers, config.n_kv_heads, config.head_dim, 1 + max_seqs * 512, max_seqs, 512,
                      DType::f32};
    kv = std::make_unique<KvPool>(backend, shape);
    runner = std::make_unique<ModelRunner>(backend, *model, *kv, StepBufferSizes{max_tokens, max_seqs, 4096}, graphs);
    runner->capture_graphs();
    // Sequence s owns slots 1 + s*512 .. : a fixed page-table row per sequence.
    for (int s = 0; s < max_seqs; ++s) {
      std::vector<int32_t> slots(512);
      for (int p = 0; p < 512; ++p) slots[size_t(p)] = 1 + s * 512 + p;
      kv->set_slots(s, 0, slots.data(), 512);
    }
  }

  int32_t token(int seq, int pos) const { return int32_t((seq * 131 + pos * 31 + 7) % config.vocab_size); }

  // A batch with prefill rows (specs with n_new > 1 or flagged) first, then decode rows.
  ForwardBatch batch(const std::vector<SeqSpec>& prefill, const std::vector<SeqSpec>& decode, int seq_offset = 0) {
    ForwardBatch fb;
    fb.mode = prefill.empty() ? ForwardMode::decode : decode.empty() ? ForwardMode::extend : ForwardMode::mixed;
    fb.n_prefill_seqs = int(prefill.size());
    fb.qo_indptr.push_back(0);
    int s = seq_offset;
    for (const auto* group : {&prefill, &decode}) {
      for (const SeqSpec& sp : *group) {
        for (int p = sp.n_prefix; p < sp.n_prefix + sp.n_new; ++p) {
          fb.input_ids.push_back(token(s, p));
          fb.positions.push_back(p);
          fb.out_cache_loc.push_back(1 + s * 512 + p);
        }
        fb.qo_indptr.push_back(fb.qo_indptr.back() + sp.n_new);
        fb.seq_lens.push_back(sp.n_prefix + sp.n_new);
        fb.req_rows.push_back(s);
        SeqSampling ss;
        ss.temperature = 0.f;
        fb.sampling.push_back(ss);
        ++s;
      }
    }
    return fb;
  }

  // Fills the KV of every sequence's prefix with an eager EXTEND step.
  void fill_prefixes(const std::vector<SeqSpec>& seqs, int seq_offset = 0) {
    std::vector<SeqSpec> pre;
    for (const auto& sp : seqs)
      if (sp.n_prefix > 0) pre.push_back({0, sp.n_prefix});
    if (pre.empty()) return;
    // Sequences keep their index: build one by one so rows line up.
    int s = seq_offset;
    for (const auto& sp : seqs) {
      if (sp.n_prefix > 0) {
        ForwardBatch fb = batch({{0, sp.n_prefix}}, {}, s);
        std::vector<int32_t> ids;
        runner->forward_eager(fb, ids);
      }
      ++s;
    }
  }

  CpuBackend backend;
  ModelConfig config;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<KvPool> kv;
  std::unique_ptr<ModelRunner> runner;
};

}  // namespace seam::test
