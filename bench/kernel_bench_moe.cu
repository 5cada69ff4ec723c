// seam_kernel_bench's MoE section (--moe): the grouped GEMMs at prefill sizes, the skinny decode
// kernels and their variants at 64 rows, the batch-1 paths at Mixtral-8x7B's and Qwen3-30B-A3B's shapes.
#include "kernel_bench.h"

namespace seam::kbench {

namespace {

// Qwen3-30B-A3B's experts (128, top-8, hidden 2048, intermediate 768) in bf16 with n_tokens rows
// routed uniformly at random (k distinct experts a row, equal weights) and the scratch as the
// model sizes it: the inputs of the grouped and skinny benches.
struct Qwen3MoeInputs {
  static constexpr int64_t E = 128, I = 768, H = 2048, k = 8;
  int64_t n, n_slots;
  Tensor gu, dn, x, out, ids, w;
  MoeScratch s;
  std::string shape;
  Qwen3MoeInputs(Bench& b, int n_tokens) : n(n_tokens), n_slots(n * k) {
    gu = b.random(DType::bf16, {E, 2 * I, H}, 0.05f);
    dn = b.random(DType::bf16, {E, H, I}, 0.05f);
    x = b.random(DType::bf16, {n, H});
    out = b.random(DType::bf16, {n, H});
    ids = b.upload_i32(random_topk_ids(n, E, k, 7), {n, k});
    w = b.upload(std::vector<float>(size_t(n_slots), 1.f / float(k)), DType::f32, {n, k});
    s = MoeScratch{b.alloc(DType::bf16, {n_slots, I}), b.alloc(DType::bf16, {n_slots, H}),
                   b.alloc(DType::i32, {2 * E + 2 + n_slots})};
    shape = std::to_string(n_tokens) + " tok E128 top-8 H2048 I768";
  }
};

}  // namespace

// The grouped MoE GEMMs at Qwen3-30B-A3B's expert shape (128 experts, top-8, hidden 2048,
// intermediate 768), uniform random routing: gate_up and down timed apart, each kernel family
// (wmma; wgmma 128 x 256 and 128 x 128, and the persistent warp-specialised 128 x 256 with cp.async
// and with TMA copies, where they apply), after that family's align on the same routing.
void bench_moe_grouped(Bench& b, int n_tokens) {
  const Qwen3MoeInputs in(b, n_tokens);
  constexpr int64_t I = Qwen3MoeInputs::I, H = Qwen3MoeInputs::H;
  const int64_t n_slots = in.n_slots;
  const Tensor &gu = in.gu, &dn = in.dn, &x = in.x, &out = in.out, &ids_d = in.ids, &w = in.w;
  const MoeScratch& s = in.s;
  const std::string& shape = in.shape;
  const double gu_flops = 2.0 * n_slots * 2 * I * H, dn_flops = 2.0 * n_slots * H * I;
  for (cuda::GroupedKernel kernel :
       {cuda::GroupedKernel::wmma, cuda::GroupedKernel::wgmma, cuda::GroupedKernel::wgmma_n128,
        cuda::GroupedKernel::wgmma_persistent, cuda::GroupedKernel::wgmma_tma}) {
    if (!cuda::grouped_kernel_applies(kernel, x, gu, dn, s)) continue;
    const std::string name = std::string("moe grouped ") + cuda::grouped_kernel_name(kernel);
    auto stages = [&](int which) {
      cuda::launch_moe_experts_grouped_with(kernel, out, x, gu, dn, ids_d, w, s, b.stream(), which);
    };
    stages(cuda::kGroupedAll);  // the align (index) and act the timed stages read
    // Rates in TFLOP/s always (bytes 0): the weights are read once, 0.8 + 0.4 GB, ~0.25 ms at 4.8 TB/s.
    const double gu_us = b.time_us([&](int) { stages(cuda::kGroupedGateUp); }, 5, 11);
    b.row(name + " gate_up", shape, gu_us, 0, gu_flops);
    const double dn_us = b.time_us([&](int) { stages(cuda::kGroupedDown); }, 5, 11);
    b.row(name + " down", shape, dn_us, 0, dn_flops);
    const double all_us = b.time_us([&](int) { stages(cuda::kGroupedAll); }, 5, 11);
    b.row(name + " layer (4 kernels)", shape, all_us, 0, gu_flops + dn_flops);
    // The combine after its real predecessor: in the model's trace a PDL-launched kernel's time
    // includes its wait on the one before (the twenty-eighth pass: combine 42 us alone, 83 after
    // the down GEMM), so its own cost is (down + combine) - down, both timed the same way.
    const double dc_us = b.time_us([&](int) { stages(cuda::kGroupedDown | cuda::kGroupedCombine); }, 5, 11);
    b.row(name + " down + combine", shape, dc_us, 0, dn_flops);
    b.row(name + " combine after down (difference)", shape, dc_us - dn_us, double(n_slots) * H * 2 + 2.0 * n_tokens * H * 2,
          0);
  }
  b.release_all();
}

// The skinny tensor-core MoE products at Qwen3-30B-A3B's decode (64 rows, 128 experts, top-8,
// hidden 2048, inter 768; uniform random routing: ~4 slots an expert, nearly every expert hit):
// the first version (skinny_mma) against the warp-streamed one (skinny_mma_stream), gate_up and
// down timed apart, rated by the weight bytes each reads once (805 MB and 403 MB: the floor is
// ~187 and ~94 us at 4.3 TB/s); then the whole op (two products and the combine).
void bench_moe_skinny(Bench& b, int n_tokens) {
  const Qwen3MoeInputs in(b, n_tokens);
  constexpr int64_t E = Qwen3MoeInputs::E, I = Qwen3MoeInputs::I, H = Qwen3MoeInputs::H;
  const Tensor &gu = in.gu, &dn = in.dn, &x = in.x, &out = in.out, &ids_d = in.ids, &w = in.w;
  const MoeScratch& s = in.s;
  const std::string& shape = in.shape;
  const double gu_bytes = double(E) * 2 * I * H * 2, dn_bytes = double(E) * H * I * 2;
  for (cuda::MoePath path : {cuda::MoePath::skinny_mma, cuda::MoePath::skinny_mma_stream}) {
    if (!cuda::moe_path_applies(path, x, gu, dn, ids_d, s)) continue;
    const std::string name = std::string("moe ") + cuda::moe_path_name(path);
    auto stages = [&](int which) {
      if (path == cuda::MoePath::skinny_mma)
        cuda::launch_moe_skinny_mma_stages(x, gu, dn, ids_d, s, which, b.stream());
      else
        cuda::launch_moe_skinny_mma_stream_stages(x, gu, dn, ids_d, s, which, b.stream());
    };
    stages(3);  // act for the timed down
    const double gu_us = b.time_us([&](int) { stages(1); }, 5, 11);
    b.row(name + " gate_up", shape, gu_us, gu_bytes, 0);
    const double dn_us = b.time_us([&](int) { stages(2); }, 5, 11);
    b.row(name + " down", shape, dn_us, dn_bytes, 0);
    const double all_us =
        b.time_us([&](int) { cuda::launch_moe_experts_path(path, out, x, gu, dn, ids_d, w, s, b.stream()); }, 5, 11);
    b.row(name + " layer (3 kernels)", shape, all_us, gu_bytes + dn_bytes, 0);
  }
  // skinny_mma_stream's tuning variants (SEAM_MOE_STREAM_VARIANT; moe_stream_variants.cuh's
  // kCfgs, from 17 on with x / act staged in shared memory), each launched directly: gate_up,
  // down and the layer (with the combine) a row.
  if (cuda::moe_path_applies(cuda::MoePath::skinny_mma_stream, x, gu, dn, ids_d, s)) {
    for (int v = 0; v < cuda::moe_skinny_mma_stream_variants(); ++v) {
      const std::string name =
          std::string("  v") + std::to_string(v) + " " + cuda::moe_skinny_mma_stream_variant_name(v);
      auto stages = [&](int which) {
        cuda::launch_moe_skinny_mma_stream_stages(x, gu, dn, ids_d, s, which, b.stream(), v);
      };
      stages(3);
      const double gu_us = b.time_us([&](int) { stages(1); }, 5, 11);
      b.row(name + " gate_up", shape, gu_us, gu_bytes, 0);
      const double dn_us = b.time_us([&](int) { stages(2); }, 5, 11);
      b.row(name + " down", shape, dn_us, dn_bytes, 0);
      const double all_us = b.time_us(
          [&](int) { cuda::launch_moe_experts_skinny_mma_stream(out, x, gu, dn, ids_d, w, s, b.stream(), v); }, 5, 11);
      b.row(name + " layer", shape, all_us, gu_bytes + dn_bytes, 0);
    }
  }
  b.release_all();
}

// The batch-1 MoE paths (moe_experts.h: gathered, gathered_stream, gathered_gemv) at one model's
// expert shape, bf16, each call routed to a different set of k experts (kRoutings disjoint sets in
// turn: no call reads the experts the one before it read from L2). Rates count the chosen
// experts' weights once: k x (2 I H + H I) x 2 bytes a call. gathered_gemv's kernels are also
// timed apart: its gate_up and down GEMVs, and the combine.
void bench_moe_batch1(Bench& b, const char* model, int64_t E, int64_t I, int64_t H, int64_t k) {
  constexpr int kRoutings = 4;
  Tensor gu = b.random(DType::bf16, {E, 2 * I, H}, 0.05f), dn = b.random(DType::bf16, {E, H, I}, 0.05f);
  Tensor x = b.random(DType::bf16, {1, H}), out = b.random(DType::bf16, {1, H});
  std::vector<Tensor> ids;
  for (int r = 0; r < kRoutings; ++r) {
    std::vector<int32_t> v(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) v[size_t(j)] = int32_t((r * k + j) % E);
    ids.push_back(b.upload_i32(v, {1, k}));
  }
  Tensor w = b.upload(std::vector<float>(size_t(k), 1.f / float(k)), DType::f32, {1, k});
  // As MoeBuffers at a 256-token step: expert_out has room for the float32 expert outputs.
  const MoeScratch s{b.alloc(DType::bf16, {256 * k, I}), b.alloc(DType::bf16, {256 * k, H}),
                     b.alloc(DType::i32, {2 * E + 2 + 256 * k})};
  const std::string shape = std::string(model) + " 1 tok E" + std::to_string(E) + " top-" + std::to_string(k);
  const double gu_bytes = double(k) * 2 * I * H * 2, dn_bytes = double(k) * H * I * 2;
  for (cuda::MoePath path : {cuda::MoePath::gathered, cuda::MoePath::gathered_stream, cuda::MoePath::gathered_gemv}) {
    if (!cuda::moe_path_applies(path, x, gu, dn, ids[0], s)) continue;
    const double us = b.time_us(
        [&](int i) {
          cuda::launch_moe_experts_path(path, out, x, gu, dn, ids[size_t(i % kRoutings)], w, s, b.stream());
        },
        8, 11);
    b.row(std::string("moe ") + cuda::moe_path_name(path), shape, us, gu_bytes + dn_bytes, 0);
  }
  if (cuda::moe_path_applies(cuda::MoePath::gathered_gemv, x, gu, dn, ids[0], s)) {
    // The same path with the combine folded into the down GEMV (the backend's at one row under
    // SEAM_MOE_FUSED_COMBINE=1; off by default until its GPU test has run).
    Tensor tickets = b.alloc(DType::i32, {8192});
    b.gpu().fill(tickets, 0.f);
    const cuda::MoeTickets tk{static_cast<unsigned*>(tickets.data), 8192};
    const double us = b.time_us(
        [&](int i) {
          cuda::launch_moe_experts_path(cuda::MoePath::gathered_gemv, out, x, gu, dn, ids[size_t(i % kRoutings)], w, s,
                                        b.stream(), tk);
        },
        8, 11);
    b.row("moe gathered_gemv+combine", shape, us, gu_bytes + dn_bytes, 0);
  }
  if (cuda::moe_path_applies(cuda::MoePath::gathered_gemv, x, gu, dn, ids[0], s)) {
    const Tensor act = s.act.rows(k), y(s.expert_out.data, DType::f32, Device::cuda, {k, H});
    const double gu_us = b.time_us(
        [&](int i) { cuda::launch_gemv_experts(act, x, false, gu, ids[size_t(i % kRoutings)], true, b.stream()); }, 8,
        11);
    b.row("moe gathered_gemv gate_up", shape, gu_us, gu_bytes, 0);
    const double dn_us = b.time_us(
        [&](int i) { cuda::launch_gemv_experts(y, act, true, dn, ids[size_t(i % kRoutings)], false, b.stream()); }, 8,
        11);
    b.row("moe gathered_gemv down", shape, dn_us, dn_bytes, 0);
    const double cb_us = b.time_us([&](int) { cuda::launch_moe_combine(out, y, w, b.stream()); }, 8, 11);
    b.row("moe gathered_gemv combine", shape, cb_us, double(k) * H * 4 + 2.0 * H * 2, 0);
  }
  b.release_all();
}

// The router stage of one token (Backend ops on the bench's CUDA backend, bf16): rms_norm +
// linear + moe_route (three kernels, the model before the fusions), rms_norm + moe_router_route
// (the route in the router GEMV's last block) and moe_norm_router_route (one kernel: the norm in
// the GEMV too). Each call back to back in one graph, as a decode step runs them: the time is
// the stage's latency, boundaries included. Bytes: the router's weights.
void bench_moe_router(Bench& b, const char* model, int64_t E, int64_t H, int64_t k) {
  Backend& g = b.gpu();
  Tensor x = b.random(DType::bf16, {1, H}), ln = b.random(DType::bf16, {H}), wr = b.random(DType::bf16, {E, H}, 0.05f);
  Tensor normed = b.alloc(DType::bf16, {1, H}), logits = b.alloc(DType::bf16, {1, E});
  Tensor ids = b.alloc(DType::i32, {1, k}), w = b.alloc(DType::f32, {1, k});
  const std::string shape = std::string(model) + " 1 tok E" + std::to_string(E) + " top-" + std::to_string(k);
  const double bytes = double(E) * H * 2;
  const double three = b.time_us([&](int) {
    g.rms_norm(normed, x, ln, 1e-6f);
    g.linear(logits, normed, wr, Tensor());
    g.moe_route(ids, w, logits, true);
  });
  b.row("moe router norm+gemv+route", shape, three, bytes, 0);
  const double two = b.time_us([&](int) {
    g.rms_norm(normed, x, ln, 1e-6f);
    g.moe_router_route(ids, w, logits, normed, wr, true);
  });
  b.row("moe router norm+gemv_route", shape, two, bytes, 0);
  const double one = b.time_us([&](int) { g.moe_norm_router_route(ids, w, logits, normed, x, ln, 1e-6f, wr, true); });
  b.row("moe router norm_gemv_route", shape, one, bytes, 0);
  b.release_all();
}

}  // namespace seam::kbench
