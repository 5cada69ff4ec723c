// seam_gemm_sweep: for each linear shape, cuBLASLt's heuristic candidates (the
// descriptors, layouts and preferences CublasLtGemm::make_plan uses: out = x @ w^T,
// bf16 in/out, fp32 compute, 32 MiB workspace) timed one by one with GemmTimer, the
// method of seam's start-up tuning (gemm_timer.h: L2 flushed before every rep, CUDA
// events around one matmul, warm-ups, median). Shows whether the heuristic's first
// pick is the fastest kernel, and by how much it is not.
//
// One line per candidate:  rank, algo id, tile id, stages id, split-k, reduction
// scheme, swizzle, custom option, cluster shape id, median us, TFLOP/s, rank-0 time /
// this time (> 1: faster than the heuristic's pick). One summary line per shape.
//
// --space: also every configuration of cuBLASLt's algorithm space (cublaslt_algo_space.h),
// each timed briefly (--space-reps), the fastest --retime of them timed again with the full
// method; prints them after the heuristic's and a line "space" per shape.
// --sustained: the layer's four GEMMs (qkv, o, gate_up, down; o and down accumulate, as in
// a step) chained over --layers copies of the weights, so no weight is L2-resident, with
// no flush or gap between them (a CUDA graph of the chain, replayed): the GEMM time of a model step at M rows, once
// with the heuristic's first pick, once with the fastest heuristic candidate (what start-up tuning keeps), and with
// --space the fastest configuration of the space. Usage: seam_gemm_sweep [--model 8b,1b] [--linear qkv,o,gate_up,down]
// [--m 64,576]
//                        [--candidates 24] [--reps 15] [--warmup 3] [--flush read|memset] [--csv FILE]
//                        [--space [--space-max N] [--space-reps R] [--retime K]] [--sustained [--layers L]]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cublaslt_gemm.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "core/tensor.h"
#include "random_fill.cuh"

namespace seam {
namespace {

using bench::random_fill_kernel;

struct Linear {
  std::string model, name;
  int64_t n, k;  // w [n, k]
};

std::vector<Linear> all_linears() {
  return {
      {"8b", "qkv", 6144, 4096},  {"8b", "o", 4096, 4096}, {"8b", "gate_up", 28672, 4096}, {"8b", "down", 4096, 14336},
      {"1b", "qkv", 3072, 2048},  {"1b", "o", 2048, 2048}, {"1b", "gate_up", 16384, 2048}, {"1b", "down", 2048, 8192},
      {"0.5b", "qkv", 1152, 896}, {"0.5b", "o", 896, 896}, {"0.5b", "gate_up", 9728, 896}, {"0.5b", "down", 896, 4864},
  };
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(item);
  return v;
}

bool listed(const std::string& list, const std::string& name) {
  if (list.empty()) return true;
  const auto v = split(list);
  return std::find(v.begin(), v.end(), name) != v.end();
}

// --model: the listed models; without it 8b and 1b (0.5b only when named).
bool model_selected(const std::string& models, const std::string& model) {
  return models.empty() ? model != "0.5b" : listed(models, model);
}

using cuda::algo_config_of;
using cuda::AlgoConfig;

struct Pick {  // per (model, linear, M): what the sustained chain pins
  cublasLtMatmulAlgo_t rank0{}, heuristic_best{}, space_best{};
  bool has_space = false;
};

std::string pick_key(const Linear& lin, int64_t m) { return lin.model + "." + lin.name + "." + std::to_string(m); }

void print_row(const char* shape, const char* tag, size_t rank, const cuda::CublasLtGemm::TimedAlgo& t, double flop,
               double r0) {
  const AlgoConfig c = algo_config_of(t.algo);
  const double tf = t.median_us > 0 ? flop / (t.median_us * 1e6) : 0;
  const double speedup = t.median_us > 0 && r0 > 0 ? r0 / t.median_us : 0;
  std::printf("  %-13s %-5s %4zu %5d %4d %4d %3d %3d %3d %3d %3d %4.0f %9.2f %7.1f %7.3f\n", shape, tag, rank, c.id,
              c.tile, c.stages, c.splitk, c.reduction, c.swizzle, c.custom, c.cluster,
              double(t.workspace_bytes) / (1 << 20), t.median_us, tf, speedup);
}

size_t fastest(const std::vector<cuda::CublasLtGemm::TimedAlgo>& v) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].median_us > 0 && (v[best].median_us <= 0 || v[i].median_us < v[best].median_us)) best = i;
  return best;
}

// The sustained chain's row counts: --m, else the mixed step's 512 and 576.
std::vector<int64_t> sustained_rows(const std::vector<int64_t>& m) {
  return m.empty() ? std::vector<int64_t>{512, 576} : m;
}

// Times `chain` (stream work, no host sync inside) as a CUDA graph: one eager run first (it
// makes the cuBLASLt plans, which capture must not), then capture, 2 untimed replays and 5 timed
// ones. Returns the replays' times in ms, sorted.
std::vector<float> time_as_graph(cudaStream_t stream, const std::function<void()>& chain) {
  chain();
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  SEAM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  chain();
  SEAM_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  SEAM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  SEAM_CUDA_CHECK(cudaEventCreate(&e0));
  SEAM_CUDA_CHECK(cudaEventCreate(&e1));
  for (int r = 0; r < 2; ++r) SEAM_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  std::vector<float> times;
  for (int r = 0; r < 5; ++r) {
    SEAM_CUDA_CHECK(cudaEventRecord(e0, stream));
    SEAM_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    SEAM_CUDA_CHECK(cudaEventRecord(e1, stream));
    SEAM_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    SEAM_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  SEAM_CUDA_CHECK(cudaEventDestroy(e0));
  SEAM_CUDA_CHECK(cudaEventDestroy(e1));
  SEAM_CUDA_CHECK(cudaGraphExecDestroy(exec));
  SEAM_CUDA_CHECK(cudaGraphDestroy(graph));
  std::sort(times.begin(), times.end());
  return times;
}

// The four GEMMs of a layer over `layers` weight copies, back to back on one stream with the
// algorithm of each pick pinned, timed as a replayed graph (time_as_graph).
void run_sustained(Backend& gpu, cudaStream_t stream, const std::string& models, const std::vector<int64_t>& m_list,
                   int layers_opt, const std::map<std::string, Pick>& picks, bool space) {
  for (const std::string model : {"8b", "1b", "0.5b"}) {
    if (!model_selected(models, model)) continue;
    std::vector<Linear> lins;
    for (const Linear& l : all_linears())
      if (l.model == model) lins.push_back(l);
    const int layers = layers_opt > 0 ? layers_opt : (model == "8b" ? 32 : model == "1b" ? 16 : 24);
    const int64_t max_m = *std::max_element(m_list.begin(), m_list.end());
    std::vector<std::vector<void*>> w(lins.size());  // [linear][layer] -> [n, k]
    std::vector<void*> x(lins.size()), out(lins.size());
    for (size_t i = 0; i < lins.size(); ++i) {
      for (int l = 0; l < layers; ++l) {
        w[i].push_back(gpu.alloc(size_t(lins[i].n * lins[i].k) * 2));
        random_fill_kernel<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(w[i].back()), lins[i].n * lins[i].k,
                                                     uint64_t(17 + 131 * l + i), 1.f / std::sqrt(float(lins[i].k)));
      }
      x[i] = gpu.alloc(size_t(max_m * lins[i].k) * 2);
      out[i] = gpu.alloc(size_t(max_m * lins[i].n) * 2);
      random_fill_kernel<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(x[i]), max_m * lins[i].k, 29, 1.f);
      SEAM_CUDA_CHECK(cudaMemsetAsync(out[i], 0, size_t(max_m * lins[i].n) * 2, stream));
    }
    SEAM_CUDA_CHECK_LAUNCH();
    for (int64_t m : m_list) {
      double flop = 0;
      for (const Linear& l : lins) flop += 2.0 * double(m) * double(l.n) * double(l.k) * layers;
      const char* names[] = {"heuristic rank 0", "heuristic best", "space best"};
      // Three interleaved rounds: a long chain heats the GPU, so a fixed order would favour the first.
      for (int round = 0; round < 3; ++round)
        for (int variant = 0; variant < (space ? 3 : 2); ++variant) {
          cuda::CublasLtGemm gemm;  // a fresh plan cache per variant: only pinned algorithms run
          bool ok = true;
          for (size_t i = 0; i < lins.size(); ++i) {
            const auto it = picks.find(pick_key(lins[i], m));
            if (it == picks.end() || (variant == 2 && !it->second.has_space)) {
              ok = false;
              break;
            }
            const Tensor wt(w[i][0], DType::bf16, Device::cuda, {lins[i].n, lins[i].k});
            const Tensor xt(x[i], DType::bf16, Device::cuda, {m, lins[i].k});
            const Tensor ot(out[i], DType::bf16, Device::cuda, {m, lins[i].n});
            const auto& p = it->second;
            gemm.pin_algo(ot, xt, wt, Tensor{},
                          variant == 0   ? p.rank0
                          : variant == 1 ? p.heuristic_best
                                         : p.space_best);
          }
          if (!ok) {
            std::printf("~ %s M=%lld %s: a linear has no pick (run without --linear)\n", model.c_str(), (long long)m,
                        names[variant]);
            continue;
          }
          auto chain = [&] {
            for (int l = 0; l < layers; ++l)
              for (size_t i = 0; i < lins.size(); ++i) {
                const Tensor wt(w[i][size_t(l)], DType::bf16, Device::cuda, {lins[i].n, lins[i].k});
                const Tensor xt(x[i], DType::bf16, Device::cuda, {m, lins[i].k});
                const Tensor ot(out[i], DType::bf16, Device::cuda, {m, lins[i].n});
                gemm.run(ot, xt, wt, Tensor{}, stream, lins[i].name == "o" || lins[i].name == "down");
              }
          };
          // A graph keeps the host's cublasLtMatmul calls (several us each) from starving the GPU.
          const std::vector<float> times = time_as_graph(stream, chain);
          std::printf(
              "~ sustained %s M=%lld, %d layers x 4 GEMMs, round %d, %s: %.3f ms (min %.3f, max %.3f) = "
              "%.0f TFLOP/s, %.1f us a layer\n",
              model.c_str(), (long long)m, layers, round, names[variant], times[2], times[0], times[4],
              flop / (double(times[2]) * 1e9), 1e3 * times[2] / layers);
        }
    }
    gpu.synchronize();
    for (size_t i = 0; i < lins.size(); ++i) {
      for (void* p : w[i]) gpu.release(p);
      gpu.release(x[i]);
      gpu.release(out[i]);
    }
  }
}

int run(int argc, char** argv) {
  CLI::App app("seam_gemm_sweep: cuBLASLt heuristic candidates timed per linear shape", "seam_gemm_sweep");
  std::string models, linears, ms, csv_path, flush = "read";
  int n_candidates = 24, reps = 15, warmup = 3, space_max = 8192, space_reps = 3, retime = 8, layers = 0;
  bool space = false, space_split_k = false, sustained = false;
  app.add_option("--model", models, "comma list of 8b, 1b, 0.5b (default 8b, 1b)");
  app.add_option("--linear", linears, "comma list of qkv, o, gate_up, down (default all)");
  app.add_option("--m", ms, "comma list of row counts M (default 8b: 1,64,128,512,576,1024,4096; 1b: 64,576,4096)");
  app.add_option("--candidates", n_candidates, "heuristic results asked for per shape")->check(CLI::Range(1, 64));
  app.add_option("--reps", reps, "timed reps per candidate (median)")->check(CLI::Range(1, cuda::GemmTimer::kMaxReps));
  app.add_option("--warmup", warmup, "untimed reps per candidate")->check(CLI::Range(0, 100));
  app.add_option("--flush", flush, "L2 flush before each rep: read (kernel) | memset")
      ->check(CLI::IsMember({"read", "memset"}));
  app.add_option("--csv", csv_path, "also write the table as CSV to this file");
  app.add_flag("--space", space, "also time every configuration of cuBLASLt's algorithm space");
  app.add_option("--space-max", space_max, "most configurations per shape")->check(CLI::Range(1, 1 << 20));
  app.add_option("--space-reps", space_reps, "timed reps per configuration in the first pass")
      ->check(CLI::Range(1, cuda::GemmTimer::kMaxReps));
  app.add_flag("--space-split-k", space_split_k, "the space also holds split-K 2, 3 and 4");
  app.add_option("--retime", retime, "fastest configurations timed again with --reps")->check(CLI::Range(1, 64));
  app.add_flag("--sustained", sustained, "time the layer's GEMMs chained over --layers weight copies");
  app.add_option("--layers", layers, "weight copies in the sustained chain (default: the model's layer count)")
      ->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  std::vector<int64_t> m_list;
  for (const auto& s : split(ms)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (...) {
      used = 0;
    }
    SEAM_CHECK(used == s.size() && v >= 1, "--m: '", s, "' is not a positive integer");
    m_list.push_back(v);
  }

  const auto t_start = std::chrono::steady_clock::now();
  auto gpu = make_cuda_backend(0);
  const auto stream = static_cast<cudaStream_t>(cuda_backend_stream(*gpu));
  cuda::CublasLtGemm gemm;
  gemm.begin_tuning(cuda::CublasLtGemm::Tuning{}, stream);  // the timing scratch
  cuda::GemmTimingMethod method;
  method.n_warmup = warmup;
  method.n_reps = reps;
  method.flush = flush == "read" ? cuda::L2Flush::read : cuda::L2Flush::memset;
  cuda::GemmTimingMethod quick = method;
  quick.n_warmup = 1;
  quick.n_reps = space_reps;

  std::unique_ptr<std::ofstream> csv;
  if (!csv_path.empty()) {
    csv = std::make_unique<std::ofstream>(csv_path);
    SEAM_CHECK(csv->good(), "--csv: cannot write '", csv_path, "'");
    *csv << "model,linear,M,N,K,source,rank,algo,tile,stages,splitk,reduction,swizzle,custom,cluster,"
            "workspace_bytes,median_us,tflops,speedup_vs_rank0\n";
  }
  auto csv_row = [&](const Linear& lin, int64_t m, const char* source, size_t rank,
                     const cuda::CublasLtGemm::TimedAlgo& t, double flop, double r0) {
    if (!csv) return;
    const AlgoConfig c = algo_config_of(t.algo);
    *csv << lin.model << ',' << lin.name << ',' << m << ',' << lin.n << ',' << lin.k << ',' << source << ',' << rank
         << ',' << c.id << ',' << c.tile << ',' << c.stages << ',' << c.splitk << ',' << c.reduction << ',' << c.swizzle
         << ',' << c.custom << ',' << c.cluster << ',' << t.workspace_bytes << ',' << t.median_us << ','
         << (t.median_us > 0 ? flop / (t.median_us * 1e6) : 0) << ','
         << (t.median_us > 0 && r0 > 0 ? r0 / t.median_us : 0) << '\n';
  };
  std::printf("# %s; flush=%s warmup=%d reps=%d (median); speedup = rank-0 us / us\n", gpu->name().c_str(),
              flush.c_str(), warmup, reps);
  std::printf("# %-13s %-5s %4s %5s %4s %4s %3s %3s %3s %3s %3s %4s %9s %7s %7s\n", "shape", "from", "rank", "algo",
              "tile", "stg", "sk", "red", "swz", "cus", "cl", "wsMB", "us", "TFLOP/s", "speedup");

  double total_rank0 = 0, total_best = 0, total_space = 0;
  int n_shapes = 0, n_beaten = 0;
  std::map<std::string, Pick> picks;
  for (const Linear& lin : all_linears()) {
    if (!model_selected(models, lin.model) || !listed(linears, lin.name)) continue;
    std::vector<int64_t> mv = m_list;
    if (mv.empty())
      mv = lin.model == "8b" ? std::vector<int64_t>{1, 64, 128, 512, 576, 1024, 4096}
                             : std::vector<int64_t>{64, 576, 4096};
    const int64_t max_m = *std::max_element(mv.begin(), mv.end());
    // One allocation per linear, sized for its largest M.
    void* w_p = gpu->alloc(size_t(lin.n * lin.k) * 2);    // [n, k]
    void* x_p = gpu->alloc(size_t(max_m * lin.k) * 2);    // [max_m, k]
    void* out_p = gpu->alloc(size_t(max_m * lin.n) * 2);  // [max_m, n]
    random_fill_kernel<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(w_p), lin.n * lin.k, 17,
                                                 1.f / std::sqrt(float(lin.k)));
    random_fill_kernel<<<1024, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(x_p), max_m * lin.k, 29, 1.f);
    SEAM_CUDA_CHECK_LAUNCH();
    for (int64_t m : mv) {
      const Tensor w(w_p, DType::bf16, Device::cuda, {lin.n, lin.k});
      const Tensor x(x_p, DType::bf16, Device::cuda, {m, lin.k});
      const Tensor out(out_p, DType::bf16, Device::cuda, {m, lin.n});
      const auto timed = gemm.time_candidates(out, x, w, Tensor{}, n_candidates, method);
      char shape[64];
      std::snprintf(shape, sizeof(shape), "%s.%s M=%lld", lin.model.c_str(), lin.name.c_str(), (long long)m);
      const double flop = 2.0 * double(m) * double(lin.n) * double(lin.k);
      const double r0 = timed.empty() ? -1 : timed[0].median_us;
      for (size_t i = 0; i < timed.size(); ++i) {
        print_row(shape, "heur", i, timed[i], flop, r0);
        csv_row(lin, m, "heuristic", i, timed[i], flop, r0);
      }
      const size_t best = fastest(timed);
      if (timed.empty() || timed[best].median_us <= 0) {
        std::printf("= %-13s no candidate ran\n", shape);
        continue;
      }
      Pick& pick = picks[pick_key(lin, m)];
      pick.rank0 = timed[0].algo;
      pick.heuristic_best = timed[best].algo;
      const double b = timed[best].median_us;
      std::printf(
          "= %-13s N=%lld K=%lld cands=%zu  rank0 %.2f us (%.0f TF)  best %.2f us (%.0f TF) rank %zu  %+.1f %%\n",
          shape, (long long)lin.n, (long long)lin.k, timed.size(), r0, r0 > 0 ? flop / (r0 * 1e6) : 0, b,
          flop / (b * 1e6), best, r0 > 0 ? 100.0 * (r0 / b - 1.0) : 0.0);
      ++n_shapes;
      if (best != 0) ++n_beaten;
      if (r0 > 0) total_rank0 += r0, total_best += b;
      if (!space) continue;

      cuda::AlgoSpaceLimits lim;
      lim.max_configs = space_max;
      lim.split_k = space_split_k;
      long n_tried = 0;
      const auto t_space = std::chrono::steady_clock::now();
      auto all = gemm.time_algo_space(out, x, w, Tensor{}, lim, quick, &n_tried);
      std::vector<cuda::CublasLtGemm::TimedAlgo> ran;
      for (const auto& t : all)
        if (t.median_us > 0) ran.push_back(t);
      std::sort(ran.begin(), ran.end(), [](const auto& a, const auto& c) { return a.median_us < c.median_us; });
      if (ran.size() > size_t(retime)) ran.resize(size_t(retime));
      // The heuristic's pick timed in the same round, so the comparison shares the clocks.
      ran.push_back(timed[best]);
      const auto again = gemm.time_algos(out, x, w, Tensor{}, ran, method);
      const double space_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_space).count();
      for (size_t i = 0; i < again.size(); ++i) {
        print_row(shape, i + 1 == again.size() ? "heur*" : "space", i, again[i], flop, r0);
        csv_row(lin, m, i + 1 == again.size() ? "heuristic_best_retimed" : "space", i, again[i], flop, r0);
      }
      const size_t sb = fastest(again);
      if (again[sb].median_us <= 0) continue;
      pick.space_best = again[sb].algo;
      pick.has_space = true;
      const double hb = again.back().median_us, s_us = again[sb].median_us;
      std::printf(
          "= %-13s space: %lld checked, %zu accepted, %.1f s; best %.2f us (%.0f TF) vs heuristic's best "
          "%.2f us in the same round: %+.1f %%\n",
          shape, (long long)n_tried, all.size(), space_s, s_us, flop / (s_us * 1e6), hb,
          hb > 0 ? 100.0 * (hb / s_us - 1.0) : 0.0);
      total_space += s_us * (b / (hb > 0 ? hb : b));  // in the first round's clocks
    }
    gpu->synchronize();
    gpu->release(w_p);
    gpu->release(x_p);
    gpu->release(out_p);
  }
  gemm.end_tuning();
  std::printf("# %d shapes, heuristic's pick beaten in %d; sum of rank-0 %.1f us vs best %.1f us (%+.1f %%)\n",
              n_shapes, n_beaten, total_rank0, total_best, total_best > 0 ? 100.0 * (total_rank0 / total_best - 1) : 0);
  if (space && total_space > 0)
    std::printf("# space: sum of best %.1f us, against the heuristic's best %.1f us (%+.1f %%)\n", total_space,
                total_best, 100.0 * (total_best / total_space - 1));

  if (sustained) run_sustained(*gpu, stream, models, sustained_rows(m_list), layers, picks, space);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::printf("# elapsed %.1f s\n", elapsed);
  return 0;
}

}  // namespace
}  // namespace seam

int main(int argc, char** argv) {
  try {
    return seam::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seam_gemm_sweep: %s\n", e.what());
    return 1;
  }
}
