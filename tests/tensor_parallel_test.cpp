// Tensor parallelism on the CPU backend (issue 25): Gloo collectives between worker threads of
// one process, the same code path a multi-GPU engine takes with NCCL.
//  - stories260K (8 heads, 4 KV heads) at TP 1, 2 and 4 gives the golden greedy ids (which are
//    TP 1's) in float32, with decode and piecewise graphs captured around the collectives;
//  - every supported architecture loads its shards and gives TP 1's last-token logits (and
//    transformers' for the tiny reference checkpoints), with KV heads split (TP 2) and
//    replicated (TP 4 over 2 KV heads): llama, qwen2 (qkv bias), qwen3 (q/k norm), mistral,
//    gemma2/3 (sandwich norms), phi3 (fused qkv/gate_up), phi4-mini, and the three MoE families;
//  - --load-format dummy at TP 2 holds the slices of TP 1's random weights (same logits), and
//    --quantization fp8 at TP 2 is as close to the float model as TP 1's FP8 is;
//  - shard shapes: heads, KV heads (split and replicated), intermediate and vocabulary slices;
//  - a rank failing at start-up stops the others with its error, naming the rank;
//  - the flags are validated with messages naming them;
//  - the communicator: all-reduce, the column gather, a CPU graph replaying collectives, and a
//    silent peer turning into an error after the timeout instead of a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>

#include "backend/communicator.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/gloo_communicator.h"
#include "backend/tcp_store.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "engine/engine_bench_access.h"
#include "engine/tp_plan.h"
#include "golden.h"
#include "hf_reference.h"
#include "model/model_config.h"
#include "model/tp_shard.h"
#include "runtime/model_runner.h"
#include "safetensors_writer.h"
#include "test_util.h"

namespace seam::test {
namespace {

using nlohmann::json;

std::string tiny_dir(const std::string& name) { return std::string(SEAM_SOURCE_DIR) + "/tests/data/hf_tiny/" + name; }

// A synthetic checkpoint of `arch` (tests/safetensors_writer.h: hidden 16, 4 heads, 2 KV heads,
// intermediate 24, vocab 32, float32), with stories260K's tokenizer beside it.
std::string synthetic_model(const std::string& arch, MoeStyle moe = MoeStyle::none) {
  const std::string dir = make_temp_dir("tp_" + arch);
  json cfg = tiny_config_json(arch);
  add_tiny_moe_fields(cfg, moe);
  write_config(dir, cfg);
  const ModelConfig c = load_model_config(dir);
  write_safetensors(dir + "/model.safetensors", model_tensors(c, "F32"));
  return dir;
}

EngineConfig config_for(const std::string& model, int tp, const std::string& tokenizer = "") {
  EngineConfig cfg;
  cfg.model_path = model;
  cfg.tokenizer_path = tokenizer;
  cfg.device = Device::cpu;
  cfg.context_length = 128;
  cfg.max_total_tokens = 1024;
  cfg.max_running_requests = 8;
  cfg.disable_cuda_graph = true;  // the graph paths are covered on stories260K below
  cfg.tp_size = tp;
  cfg.dist_timeout = 20;
  return cfg;
}

// Last-token logits of each prompt alone, every rank stepping alike; rank 0's logits.
std::vector<std::vector<float>> tp_logits(Engine& engine, const std::vector<RefPrompt>& prompts) {
  ModelRunner& rank0 = EngineBenchAccess::runner(engine);
  std::vector<std::vector<float>> out;
  EngineBenchAccess::on_every_rank(engine, [&](ModelRunner& r) {
    auto logits = run_logits(r, prompts, engine.model_info().vocab_size, 64, /*batched=*/false);
    if (&r == &rank0) out = std::move(logits);
  });
  return out;
}

std::vector<std::vector<int32_t>> greedy(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int n) {
  SamplingParams p;
  p.temperature = 0.f;
  p.max_new_tokens = n;
  p.ignore_eos = true;
  std::vector<std::vector<int32_t>> ids;
  for (const GenerateResult& r : engine.generate(prompts, std::vector<SamplingParams>(prompts.size(), p)))
    ids.push_back(r.output_ids);
  return ids;
}

// ------------------------------------------------------------------ stories260K, golden ids

TEST(TensorParallel, StoriesGoldenIdsAtTp124WithGraphs) {
  // Four of the golden cases (prompts of 5, 8, 33 and 14 tokens; 48 to 64 new tokens): every
  // collective of a step is a Gloo round trip between threads, and CI has two cores
  // (engine_golden_test runs all of them at TP 1).
  const std::vector<GoldenCase> all = golden_cases();
  ASSERT_GE(all.size(), 8u);
  const std::vector<GoldenCase> cases = {all[0], all[4], all[5], all[7]};
  uint64_t tp1_weight_bytes = 0, tp1_kv_bytes = 0;
  for (int tp : {1, 2, 4}) {
    SCOPED_TRACE("tp " + std::to_string(tp));
    EngineConfig cfg = cpu_engine_config();
    cfg.tp_size = tp;
    cfg.dist_timeout = 20;
    cfg.cuda_graph_bs = "1,2,4";
    cfg.piecewise_cuda_graph_tokens = "16,64";
    cfg.enable_mixed_chunk = true;
    Engine engine(cfg);
    expect_golden_outputs(engine, cases);
    const EngineStats s = engine.stats();
    // The graphs (collectives inside) were replayed, not bypassed.
    EXPECT_GT(s.decode_graph_replays, 0u);
    EXPECT_GT(s.piecewise_replays, 0u);
    EXPECT_EQ(s.captures_after_seal, 0u);
    // Per-rank memory (/metrics): every rank listed; KV heads split evenly over the same slot
    // count; each rank's weights less than the whole model (the embedding is whole on each).
    EXPECT_EQ(s.tp_size, uint64_t(tp));
    ASSERT_EQ(s.tp_rank_weight_bytes.size(), size_t(tp));
    ASSERT_EQ(s.tp_rank_kv_bytes.size(), size_t(tp));
    if (tp == 1) {
      tp1_weight_bytes = s.tp_rank_weight_bytes.at("0");
      tp1_kv_bytes = s.tp_rank_kv_bytes.at("0");
      continue;
    }
    for (int r = 0; r < tp; ++r) {
      EXPECT_EQ(s.tp_rank_kv_bytes.at(std::to_string(r)) * uint64_t(tp), tp1_kv_bytes) << "rank " << r;
      EXPECT_LT(s.tp_rank_weight_bytes.at(std::to_string(r)), tp1_weight_bytes) << "rank " << r;
    }
  }
}

// ------------------------------------------------------------------ every architecture

struct ArchCase {
  std::string name;
  std::string model, tokenizer;
  bool has_reference;  // tests/data/hf_tiny: transformers' logits in reference.json
};

std::vector<ArchCase> arch_cases() {
  std::vector<ArchCase> v;
  for (const char* arch : {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"})
    v.push_back({arch, synthetic_model(arch), stories_dir(), false});
  for (const char* name : {"tiny-mistral", "tiny-gemma2", "tiny-gemma3", "tiny-gemma3-mm", "tiny-phi3", "tiny-phi4",
                           "tiny-mixtral", "tiny-qwen2-moe", "tiny-qwen3-moe"})
    v.push_back({name, tiny_dir(name), "", true});
  return v;
}

std::vector<RefPrompt> prompts_for(const ArchCase& a, int vocab) {
  if (a.has_reference) return load_hf_reference(a.model);
  RefPrompt p1, p2;
  p1.ids = {1, 5, 9, 3, 17, 30, 2, 11};
  for (int i = 0; i < 21; ++i) p2.ids.push_back(int32_t((i * 7 + 3) % vocab));
  return {p1, p2};
}

TEST(TensorParallel, EveryArchitectureMatchesTp1AtTp2AndTp4) {
  // TP 2 on every architecture; TP 4 on the ones whose KV heads are replicated or split to one.
  for (const ArchCase& a : arch_cases()) {
    SCOPED_TRACE(a.name);
    std::vector<RefPrompt> prompts;
    std::vector<std::vector<float>> ref_logits;
    std::vector<std::vector<int32_t>> ref_ids, inputs;
    {
      Engine tp1(config_for(a.model, 1, a.tokenizer));
      prompts = prompts_for(a, tp1.model_info().vocab_size);
      for (const RefPrompt& p : prompts) inputs.push_back(p.ids);
      ref_logits = tp_logits(tp1, prompts);
      ref_ids = greedy(tp1, inputs, 8);
    }
    // TP 4 where it adds a case: KV heads replicated (2 KV heads), or split 1 per rank (phi3).
    const bool tp4 = a.name == "tiny-mistral" || a.name == "tiny-phi3" || a.name == "tiny-qwen2-moe" ||
                     a.name == "Qwen2ForCausalLM";
    for (int tp : {2, 4}) {
      if (tp == 4 && !tp4) continue;
      SCOPED_TRACE("tp " + std::to_string(tp));
      Engine engine(config_for(a.model, tp, a.tokenizer));
      const auto logits = tp_logits(engine, prompts);
      ASSERT_EQ(logits.size(), ref_logits.size());
      for (size_t i = 0; i < logits.size(); ++i) {
        // Only the order of float32 sums differs from TP 1.
        EXPECT_LT(rel_err(logits[i], ref_logits[i]), 1e-5) << "prompt " << i;
        if (a.has_reference && a.name.find("phi") == std::string::npos)  // Phi's long prompts: model_families_test
          EXPECT_LT(rel_err(logits[i], prompts[i].logits_fp32), 1e-4) << "prompt " << i << " vs transformers";
      }
      EXPECT_EQ(greedy(engine, inputs, 8), ref_ids);
    }
  }
}

// ------------------------------------------------------------------ dummy weights, FP8

// Last-token logits and 8 greedy ids of `prompts` at `cfg` (every rank stepping alike).
struct TpRun {
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<int32_t>> ids;
};
TpRun tp_run(const EngineConfig& cfg, const std::vector<RefPrompt>& prompts) {
  Engine engine(cfg);
  std::vector<std::vector<int32_t>> inputs;
  for (const RefPrompt& p : prompts) inputs.push_back(p.ids);
  TpRun r;
  r.logits = tp_logits(engine, prompts);
  r.ids = greedy(engine, inputs, 8);
  return r;
}

TEST(TensorParallel, DummyWeightsAtTp2AreTp1sSlices) {
  // Checkpoint::dummy seeds each tensor from its name over the whole model's shape; a rank's
  // row slices move along that stream and its column slices (o_proj, down, the experts' down,
  // slice_cols) are computed from it, so TP 2 runs TP 1's very weights: the logits differ only
  // by the order of float32 sums. Qwen2 adds the q/k/v biases (slice_1d), qwen2-moe the
  // experts' and the shared expert's slices.
  const std::vector<std::pair<std::string, std::string>> models = {
      {synthetic_model("Qwen2ForCausalLM"), stories_dir()}, {tiny_dir("tiny-qwen2-moe"), ""}};
  for (const auto& [model, tokenizer] : models) {
    SCOPED_TRACE(model);
    EngineConfig cfg = config_for(model, 1, tokenizer);
    cfg.load_format = "dummy";
    RefPrompt p1, p2;
    const int vocab = load_model_config(model).vocab_size;
    p1.ids = {1, 5, 9, 3, 17, 30, 2, 11};
    for (int i = 0; i < 21; ++i) p2.ids.push_back(int32_t((i * 7 + 3) % vocab));
    const std::vector<RefPrompt> prompts = {p1, p2};
    const TpRun tp1 = tp_run(cfg, prompts);
    cfg.tp_size = 2;
    const TpRun tp2 = tp_run(cfg, prompts);
    ASSERT_EQ(tp2.logits.size(), tp1.logits.size());
    for (size_t i = 0; i < tp1.logits.size(); ++i) EXPECT_LT(rel_err(tp2.logits[i], tp1.logits[i]), 1e-5) << i;
    EXPECT_EQ(tp2.ids, tp1.ids);
    // Not the file's weights: the dummy load really ran.
    cfg.load_format = "auto";
    const TpRun file = tp_run(cfg, prompts);
    EXPECT_GT(rel_err(file.logits[0], tp2.logits[0]), 1e-2);
  }
}

TEST(TensorParallel, Fp8QuantizationAtTp2IsAsCloseToTheFloatModelAsTp1) {
  // --quantization fp8 quantizes each rank's shard per output channel: a row-parallel shard's
  // scales are its own columns' (as in vLLM), so TP 2's codes are not TP 1's, but its error
  // against the float model is of the same size. A shard quantized with wrong scales or
  // misplaced rows would be far off.
  const std::string model = tiny_dir("tiny-mistral");
  const std::vector<RefPrompt> prompts = load_hf_reference(model);
  EngineConfig cfg = config_for(model, 1);
  const TpRun float_tp1 = tp_run(cfg, prompts);
  cfg.quantization = "fp8";
  const TpRun fp8_tp1 = tp_run(cfg, prompts);
  cfg.tp_size = 2;
  const TpRun fp8_tp2 = tp_run(cfg, prompts);
  ASSERT_EQ(fp8_tp2.logits.size(), float_tp1.logits.size());
  for (size_t i = 0; i < float_tp1.logits.size(); ++i) {
    const double e1 = rel_err(fp8_tp1.logits[i], float_tp1.logits[i]);
    const double e2 = rel_err(fp8_tp2.logits[i], float_tp1.logits[i]);
    printf("prompt %zu: fp8 vs float rel_err tp1 %.3g tp2 %.3g\n", i, e1, e2);
    EXPECT_GT(e1, 1e-5) << "prompt " << i << ": FP8 applied at TP 1";
    EXPECT_GT(e2, 1e-5) << "prompt " << i << ": FP8 applied at TP 2";
    EXPECT_LT(e2, 2 * e1) << "prompt " << i;
  }
}

// ------------------------------------------------------------------ shard shapes

TEST(TensorParallel, ShardShapesSplitHeadsKvHeadsIntermediateAndVocabulary) {
  const ModelConfig c = load_model_config(stories_dir());  // 8 heads, 4 KV heads, 172 inter, 512 vocab
  ASSERT_EQ(c.n_heads, 8);
  ASSERT_EQ(c.n_kv_heads, 4);
  const ModelConfig one = shard_model_config(c, 1, 0);
  EXPECT_EQ(one.n_heads, 8);
  EXPECT_EQ(one.n_kv_heads, 4);
  EXPECT_FALSE(one.tp.active());
  for (int r = 0; r < 2; ++r) {
    const ModelConfig s = shard_model_config(c, 2, r);
    EXPECT_EQ(s.n_heads, 4);
    EXPECT_EQ(s.n_kv_heads, 2);
    EXPECT_EQ(s.tp.q_head_begin, 4 * r);
    EXPECT_EQ(s.tp.kv_head_begin, 2 * r);
    EXPECT_EQ(s.intermediate_size, 86);
    EXPECT_EQ(s.tp.inter_begin, 86 * r);
    EXPECT_EQ(s.tp.vocab_local, 256);
    EXPECT_EQ(s.tp.vocab_begin, 256 * r);
    EXPECT_EQ(s.vocab_size, 512);  // the logits are gathered to full width
    EXPECT_EQ(s.head_dim, c.head_dim);
    EXPECT_EQ(s.hidden_size, c.hidden_size);
  }
  // 4 ranks over 2 KV heads (tiny-mistral): each KV head replicated on the two ranks whose q
  // heads read it (q head h reads KV head h / 2).
  const ModelConfig m = load_model_config(tiny_dir("tiny-mistral"));
  ASSERT_EQ(m.n_heads, 4);
  ASSERT_EQ(m.n_kv_heads, 2);
  for (int r = 0; r < 4; ++r) {
    const ModelConfig s = shard_model_config(m, 4, r);
    EXPECT_EQ(s.n_heads, 1);
    EXPECT_EQ(s.n_kv_heads, 1);
    EXPECT_EQ(s.tp.q_head_begin, r);
    EXPECT_EQ(s.tp.kv_head_begin, r / 2);
  }
  // MoE: each expert's and the shared expert's intermediate split.
  const ModelConfig q = load_model_config(tiny_dir("tiny-qwen2-moe"));
  const ModelConfig qs = shard_model_config(q, 2, 1);
  EXPECT_EQ(qs.moe.expert_intermediate_size, q.moe.expert_intermediate_size / 2);
  EXPECT_EQ(qs.tp.expert_inter_begin, q.moe.expert_intermediate_size / 2);
  EXPECT_EQ(qs.moe.shared_expert_intermediate_size, q.moe.shared_expert_intermediate_size / 2);
  EXPECT_EQ(qs.tp.shared_inter_begin, q.moe.shared_expert_intermediate_size / 2);
  EXPECT_EQ(qs.moe.n_experts, q.moe.n_experts);  // every rank holds every expert's slice
}

TEST(TensorParallel, HostSlicesTakeTheRightElements) {
  std::vector<float> w(3 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i);
  HostTensor t;
  t.name = "w";
  t.dtype = DType::f32;
  t.shape = {3, 5};
  t.data = w.data();
  std::vector<uint8_t> storage;
  const HostTensor c = slice_cols(t, 1, 2, storage);  // columns 1..2 of each row
  ASSERT_EQ(c.shape, (std::vector<int64_t>{3, 2}));
  const float* p = static_cast<const float*>(c.data);
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{1, 2, 6, 7, 11, 12}));
  HostTensor b = t;
  b.shape = {15};
  const HostTensor s = slice_1d(b, 4, 3);
  EXPECT_EQ(static_cast<const float*>(s.data)[0], 4.f);
  EXPECT_EQ(s.shape, (std::vector<int64_t>{3}));

  // A random (--load-format dummy) tensor: the slices hold the whole tensor's elements.
  HostTensor r;
  r.name = "r";
  r.dtype = DType::f32;
  r.shape = {3, 5};
  r.random = true;
  r.fill = RandomFill{77, 10, 0.5f, 0.25f};
  std::vector<float> whole(15);
  r.to_f32(whole.data());
  const HostTensor rc = slice_cols(r, 1, 2, storage);
  ASSERT_EQ(rc.shape, (std::vector<int64_t>{3, 2}));
  std::vector<float> got(6);
  rc.to_f32(got.data());
  EXPECT_EQ(got, (std::vector<float>{whole[1], whole[2], whole[6], whole[7], whole[11], whole[12]}));
  HostTensor rb = r;
  rb.shape = {15};
  const HostTensor rs = slice_1d(rb, 4, 3);
  ASSERT_TRUE(rs.random);
  got.resize(3);
  rs.to_f32(got.data());
  EXPECT_EQ(got, (std::vector<float>{whole[4], whole[5], whole[6]}));
}

// ------------------------------------------------------------------ failures

TEST(TensorParallel, RankFailingAtStartupStopsTheOthersWithItsError) {
  for (int failing : {1, 3}) {
    ::setenv("SEAM_TP_FAULT_RANK", std::to_string(failing).c_str(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      Engine engine(config_for(stories_dir(), 4));
      ADD_FAILURE() << "the engine started although rank " << failing << " failed";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("tp rank " + std::to_string(failing) + "/4 failed while loading its model shard"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find("injected start-up fault"), std::string::npos) << msg;
    }
    ::unsetenv("SEAM_TP_FAULT_RANK");
    // The others learnt it at the agreement, not from a timeout (--dist-timeout is 20 s here).
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  }
}

TEST(TensorParallel, FlagsAreValidatedNamingTheFlag) {
  const ModelConfig c = load_model_config(stories_dir());
  auto error_of = [&](EngineConfig cfg) {
    try {
      resolve_tp_plan(cfg, c, Device::cpu);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EngineConfig cfg;
  cfg.tp_size = 3;
  EXPECT_NE(error_of(cfg).find("--tp-size 3 does not divide the model's 8 attention heads"), std::string::npos);
  cfg.tp_size = 8;  // 8 heads and 4 KV heads divide, 172 intermediate rows do not
  EXPECT_NE(error_of(cfg).find("does not divide the model's 172 intermediate_size rows"), std::string::npos);
  cfg.tp_size = 0;
  EXPECT_NE(error_of(cfg).find("--tp-size must be at least 1"), std::string::npos);
  cfg.tp_size = 4;
  cfg.nnodes = 3;
  EXPECT_NE(error_of(cfg).find("--nnodes 3 does not divide --tp-size 4"), std::string::npos);
  cfg.nnodes = 2;
  EXPECT_NE(error_of(cfg).find("--nnodes 2 needs --dist-init-addr"), std::string::npos);
  cfg.dist_init_addr = "node0";
  EXPECT_NE(error_of(cfg).find("--dist-init-addr: 'node0' is not HOST:PORT"), std::string::npos);
  cfg.dist_init_addr = "node0:70000";
  EXPECT_NE(error_of(cfg).find("port 70000 is outside"), std::string::npos);
  cfg.dist_init_addr = "10.0.0.1:29500";
  cfg.node_rank = 2;
  EXPECT_NE(error_of(cfg).find("--node-rank 2 is outside 0..1"), std::string::npos);
  cfg.node_rank = 1;
  const TpPlan p = resolve_tp_plan(cfg, c, Device::cpu);
  EXPECT_EQ(p.ranks_per_node, 2);
  EXPECT_EQ(p.first_local_rank(), 2);
  EXPECT_EQ(p.host, "10.0.0.1");
  EXPECT_EQ(p.port, 29500);
  cfg = EngineConfig{};
  cfg.tp_size = 2;
  cfg.speculative_algorithm = "STANDALONE";
  EXPECT_NE(error_of(cfg).find("STANDALONE does not run with --tp-size 2"), std::string::npos);
  // A padded vocabulary is refused rather than sharded wrongly.
  ModelConfig odd = c;
  odd.vocab_size = 511;
  EXPECT_THROW(check_tp_size(odd, 2), Error);
}

TEST(TensorParallel, CliFlagsParseIntoTheConfig) {
  auto parse = [](const std::string& args) {
    CLI::App app("test");
    cli::EngineFlags flags;
    flags.add_to(app);
    app.parse("--model-path " + stories_dir() + " --device cpu " + args, false);
    return flags.finish();
  };
  const EngineConfig d = parse("");
  EXPECT_EQ(d.tp_size, 1);
  EXPECT_EQ(d.nnodes, 1);
  EXPECT_EQ(d.node_rank, 0);
  EXPECT_EQ(d.dist_init_addr, "");
  EXPECT_EQ(d.dist_timeout, 300);
  EXPECT_EQ(parse("--tp 4").tp_size, 4);  // sglang's alias
  const EngineConfig c =
      parse("--tp-size 8 --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:29500 --dist-timeout 60");
  EXPECT_EQ(c.tp_size, 8);
  EXPECT_EQ(c.nnodes, 2);
  EXPECT_EQ(c.node_rank, 1);
  EXPECT_EQ(c.dist_init_addr, "10.0.0.1:29500");
  EXPECT_EQ(c.dist_timeout, 60);
}

// ------------------------------------------------------------------ several nodes

// A port nobody listens on right now (the kernel's pick for a listener we close at once).
int free_port() {
  TcpStoreServer probe("127.0.0.1", 0);
  return probe.port();
}

TEST(TensorParallel, TwoNodesNode1FollowsNode0sSteps) {
  // Two "nodes" in one process (the same code path as two machines: the store over TCP, the
  // steps through the store's channel), one rank each.
  const std::string addr = "127.0.0.1:" + std::to_string(free_port());
  auto node_config = [&](int node) {
    EngineConfig cfg = cpu_engine_config();
    cfg.tp_size = 2;
    cfg.nnodes = 2;
    cfg.node_rank = node;
    cfg.dist_init_addr = addr;
    cfg.dist_timeout = 20;
    cfg.disable_cuda_graph = true;
    return cfg;
  };
  std::unique_ptr<Engine> follower;
  std::string follower_error;
  std::thread t([&] {
    try {
      follower = std::make_unique<Engine>(node_config(1));
    } catch (const std::exception& e) {
      follower_error = e.what();
    }
  });
  std::optional<std::string> follower_end = std::string("not ended");
  {
    Engine node0(node_config(0));
    t.join();
    ASSERT_TRUE(follower) << follower_error;
    // A follower takes no requests of its own.
    EXPECT_THROW(follower->generate({{1, 2, 3}}, {SamplingParams{}}), Error);
    const std::vector<GoldenCase> all = golden_cases();
    expect_golden_outputs(node0, {all[0], all[4], all[5]});
  }  // node 0 closes the group
  follower_end = follower->wait_follower();
  EXPECT_FALSE(follower_end.has_value()) << *follower_end;
  follower.reset();
}

TEST(TensorParallel, ANodeWithoutNode0StopsWithAClearErrorAfterTheTimeout) {
  const std::string dir = make_temp_dir("tp_node1");
  const std::string cmd = std::string(SEAM_BINARY) + " generate --model-path " + stories_dir() +
                          " --device cpu --tp-size 2 --nnodes 2 --node-rank 1 --dist-init-addr 127.0.0.1:" +
                          std::to_string(free_port()) + " --dist-timeout 1 --prompt hi > " + dir + "/out 2> " + dir +
                          "/err";
  const int status = std::system(cmd.c_str());
  EXPECT_NE(status, 0);
  const std::string err = read_file(dir + "/err");
  EXPECT_NE(err.find("cannot reach the tensor-parallel store at 127.0.0.1:"), std::string::npos) << err;
  EXPECT_NE(err.find("is node 0 started?"), std::string::npos) << err;
}

// ------------------------------------------------------------------ the communicator

// Runs fn(rank, communicator) on n threads of one group; returns each rank's error ("" = none).
std::vector<std::string> run_group(int n, std::chrono::milliseconds timeout,
                                   const std::function<void(int, Communicator&)>& fn) {
  TcpStoreServer server("127.0.0.1", 0);
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        DistInit init;
        init.rank = r;
        init.size = n;
        init.port = server.port();
        init.timeout = timeout;
        TcpStore store("127.0.0.1", server.port(), timeout);
        auto comm = make_gloo_communicator(store, init);
        fn(r, *comm);
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  return errors;
}

TEST(Communicator, AllReduceGatherColsAndHostCollectives) {
  const int n = 3;
  const auto errors = run_group(n, std::chrono::seconds(20), [&](int r, Communicator& comm) {
    EXPECT_EQ(comm.rank(), r);
    EXPECT_EQ(comm.size(), n);
    std::vector<float> x = {float(r), 1.f, 10.f * float(r + 1)};
    comm.all_reduce_sum(Tensor(x.data(), DType::f32, Device::cpu, {3}));
    EXPECT_EQ(x, (std::vector<float>{0 + 1 + 2, 3, 10 + 20 + 30}));
    // Column gather through the CPU backend, recorded in a graph and replayed on every rank.
    CpuBackend backend;
    backend.set_communicator(&comm);
    std::vector<float> in = {float(r), float(10 + r), float(100 + r), float(110 + r)};  // [2 rows, 2 cols]
    std::vector<float> out(2 * 2 * n, -1.f), scratch(2 * 2 * n);
    Tensor tin(in.data(), DType::f32, Device::cpu, {2, 2}), tout(out.data(), DType::f32, Device::cpu, {2, 2 * n});
    Tensor tscratch(scratch.data(), DType::f32, Device::cpu, {2 * 2 * n});
    backend.begin_capture();
    backend.all_gather_cols(tout, tin, tscratch);
    auto graph = backend.end_capture();
    EXPECT_EQ(out[0], -1.f);  // recorded, not run
    backend.replay(*graph);
    // Row i = every rank's row i side by side.
    EXPECT_EQ(out, (std::vector<float>{0, 10, 1, 11, 2, 12, 100, 110, 101, 111, 102, 112}));
    // Host collectives go through the store.
    const auto all = comm.all_gather_bytes("rank" + std::to_string(r));
    EXPECT_EQ(all, (std::vector<std::string>{"rank0", "rank1", "rank2"}));
    int32_t v = r == 2 ? 42 : 0;
    comm.broadcast_bytes(&v, sizeof v, 2);
    EXPECT_EQ(v, 42);
    backend.set_communicator(nullptr);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

TEST(Communicator, ASilentPeerIsAnErrorNamingTheRankNotAHang) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto errors = run_group(2, std::chrono::milliseconds(1500), [&](int r, Communicator& comm) {
    // Both constructors' rendezvous done first: a peer that left before rank 0's connectFullMesh
    // had finished its side fails that rendezvous instead ("Gloo rendezvous failed", also naming
    // the rank; seen in CI under load), which is not the case this test is about.
    comm.barrier();
    if (r == 1) return;  // leaves without its part of the all-reduce
    std::vector<float> x = {1.f};
    comm.all_reduce_sum(Tensor(x.data(), DType::f32, Device::cpu, {1}));
  });
  EXPECT_NE(errors[0].find("tp rank 0/2: all_reduce_sum failed"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[1], "");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
}

TEST(TcpStore, WaitsForKeysTimesOutAndSeesTheServerGo) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0);
  TcpStore a("127.0.0.1", server->port(), std::chrono::milliseconds(800)),
      b("127.0.0.1", server->port(), std::chrono::milliseconds(800));
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    a.set("k", std::string("v\0w", 3));
  });
  EXPECT_EQ(b.get("k"), std::string("v\0w", 3));  // waited for it
  setter.join();
  EXPECT_EQ(a.add("n", 2), 2);
  EXPECT_EQ(b.add("n", 3), 5);
  try {
    b.get("missing");
    ADD_FAILURE() << "no timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out after 800 ms waiting for 'missing'"), std::string::npos)
        << e.what();
  }
  server.reset();  // node 0 went away
  EXPECT_THROW(a.get("k"), Error);
  EXPECT_THROW(TcpStore("127.0.0.1", 1, std::chrono::milliseconds(200)), Error);  // nobody listens
}

}  // namespace
}  // namespace seam::test
