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
// Usage: seam_gemm_sweep [--model 8b,1b] [--linear qkv,o,gate_up,down] [--m 64,576]
//                        [--candidates 24] [--reps 15] [--warmup 3] [--flush read|memset] [--csv FILE]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
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
      {"8b", "qkv", 6144, 4096},    {"8b", "o", 4096, 4096},   {"8b", "gate_up", 28672, 4096},
      {"8b", "down", 4096, 14336},  {"1b", "qkv", 3072, 2048}, {"1b", "o", 2048, 2048},
      {"1b", "gate_up", 16384, 2048}, {"1b", "down", 2048, 8192},
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

struct AlgoConfig {
  int id = -1, tile = -1, stages = -1, splitk = -1, reduction = -1, swizzle = -1, custom = -1, cluster = -1;
};

template <typename T>
int get_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return -1;
  return int(v);
}

AlgoConfig config_of(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig c;
  c.id = get_attr<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  c.tile = get_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  c.stages = get_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  c.splitk = get_attr<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  c.reduction = get_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  c.swizzle = get_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  c.custom = get_attr<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  c.cluster = get_attr<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  return c;
}

int run(int argc, char** argv) {
  CLI::App app("seam_gemm_sweep: cuBLASLt heuristic candidates timed per linear shape", "seam_gemm_sweep");
  std::string models, linears, ms, csv_path, flush = "read";
  int n_candidates = 24, reps = 15, warmup = 3;
  app.add_option("--model", models, "comma list of 8b, 1b (default both)");
  app.add_option("--linear", linears, "comma list of qkv, o, gate_up, down (default all)");
  app.add_option("--m", ms, "comma list of row counts M (default 8b: 1,64,128,512,576,1024,4096; 1b: 64,576,4096)");
  app.add_option("--candidates", n_candidates, "heuristic results asked for per shape")->check(CLI::Range(1, 64));
  app.add_option("--reps", reps, "timed reps per candidate (median)")->check(CLI::Range(1, cuda::GemmTimer::kMaxReps));
  app.add_option("--warmup", warmup, "untimed reps per candidate")->check(CLI::Range(0, 100));
  app.add_option("--flush", flush, "L2 flush before each rep: read (kernel) | memset")
      ->check(CLI::IsMember({"read", "memset"}));
  app.add_option("--csv", csv_path, "also write the table as CSV to this file");
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

  std::unique_ptr<std::ofstream> csv;
  if (!csv_path.empty()) {
    csv = std::make_unique<std::ofstream>(csv_path);
    SEAM_CHECK(csv->good(), "--csv: cannot write '", csv_path, "'");
    *csv << "model,linear,M,N,K,rank,algo,tile,stages,splitk,reduction,swizzle,custom,cluster,workspace_bytes,"
            "median_us,tflops,speedup_vs_rank0\n";
  }
  std::printf("# %s; flush=%s warmup=%d reps=%d (median); speedup = rank-0 us / us\n", gpu->name().c_str(),
              flush.c_str(), warmup, reps);
  std::printf("# %-13s %4s %5s %4s %4s %3s %3s %3s %3s %3s %4s %9s %7s %7s\n", "shape", "rank", "algo", "tile", "stg",
              "sk", "red", "swz", "cus", "cl", "wsMB", "us", "TFLOP/s", "speedup");

  double total_rank0 = 0, total_best = 0;
  int n_shapes = 0, n_beaten = 0;
  for (const Linear& lin : all_linears()) {
    if (!listed(models, lin.model) || !listed(linears, lin.name)) continue;
    std::vector<int64_t> mv = m_list;
    if (mv.empty()) mv = lin.model == "8b" ? std::vector<int64_t>{1, 64, 128, 512, 576, 1024, 4096}
                                           : std::vector<int64_t>{64, 576, 4096};
    const int64_t max_m = *std::max_element(mv.begin(), mv.end());
    // One allocation per linear, sized for its largest M.
    void* w_p = gpu->alloc(size_t(lin.n * lin.k) * 2);      // [n, k]
    void* x_p = gpu->alloc(size_t(max_m * lin.k) * 2);      // [max_m, k]
    void* out_p = gpu->alloc(size_t(max_m * lin.n) * 2);    // [max_m, n]
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
      size_t best = 0;
      for (size_t i = 0; i < timed.size(); ++i) {
        const auto& t = timed[i];
        if (t.median_us > 0 && (timed[best].median_us <= 0 || t.median_us < timed[best].median_us)) best = i;
        const AlgoConfig c = config_of(t.algo);
        const double tf = t.median_us > 0 ? flop / (t.median_us * 1e6) : 0;
        const double speedup = t.median_us > 0 && r0 > 0 ? r0 / t.median_us : 0;
        std::printf("  %-13s %4zu %5d %4d %4d %3d %3d %3d %3d %3d %4.0f %9.2f %7.1f %7.3f\n", shape, i, c.id, c.tile,
                    c.stages, c.splitk, c.reduction, c.swizzle, c.custom, c.cluster,
                    double(t.workspace_bytes) / (1 << 20), t.median_us, tf, speedup);
        if (csv)
          *csv << lin.model << ',' << lin.name << ',' << m << ',' << lin.n << ',' << lin.k << ',' << i << ',' << c.id
               << ',' << c.tile << ',' << c.stages << ',' << c.splitk << ',' << c.reduction << ',' << c.swizzle << ','
               << c.custom << ',' << c.cluster << ',' << t.workspace_bytes << ',' << t.median_us << ',' << tf << ','
               << speedup << '\n';
      }
      if (timed.empty() || timed[best].median_us <= 0) {
        std::printf("= %-13s no candidate ran\n", shape);
        continue;
      }
      const double b = timed[best].median_us;
      std::printf("= %-13s N=%lld K=%lld cands=%zu  rank0 %.2f us (%.0f TF)  best %.2f us (%.0f TF) rank %zu  %+.1f %%\n",
                  shape, (long long)lin.n, (long long)lin.k, timed.size(), r0, r0 > 0 ? flop / (r0 * 1e6) : 0, b,
                  flop / (b * 1e6), best, r0 > 0 ? 100.0 * (r0 / b - 1.0) : 0.0);
      ++n_shapes;
      if (best != 0) ++n_beaten;
      if (r0 > 0) total_rank0 += r0, total_best += b;
    }
    gpu->synchronize();
    gpu->release(w_p);
    gpu->release(x_p);
    gpu->release(out_p);
  }
  gemm.end_tuning();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  std::printf("# %d shapes, heuristic's pick beaten in %d; sum of rank-0 %.1f us vs best %.1f us (%+.1f %%); "
              "elapsed %.1f s\n",
              n_shapes, n_beaten, total_rank0, total_best, total_best > 0 ? 100.0 * (total_rank0 / total_best - 1) : 0,
              elapsed);
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
