#include "backend/cuda/cublaslt_gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/bias_add.h"
#include "backend/cuda/cuda_check.h"
#include "core/log.h"

namespace seam::cuda {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    // clang-format off
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: throw Error(detail::concat("linear: unsupported dtype ", dtype_name(t)));
      // clang-format on
  }
}

// Largest power of two (<= 256) dividing the address: cuBLASLt kernels assume the
// alignment the preference promises.
int64_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int64_t a = 1;
  while (a < 256 && (v % uintptr_t(a * 2)) == 0) a *= 2;
  return a;
}

// A configured algorithm as the heuristic would return it, for the timing helpers.
cublasLtMatmulHeuristicResult_t as_candidate(const cublasLtMatmulAlgo_t& algo, size_t workspace_bytes, float waves) {
  cublasLtMatmulHeuristicResult_t h{};
  h.algo = algo;
  h.workspaceSize = workspace_bytes;
  h.wavesCount = waves;
  h.state = CUBLAS_STATUS_SUCCESS;
  return h;
}

// SEAM_GEMM_AUTOTUNE_LOG=1: one stderr line per tuned plan (shape, rank kept, medians).
bool log_tuning() {
  static const bool on = [] {
    const char* env = std::getenv("SEAM_GEMM_AUTOTUNE_LOG");
    return env != nullptr && std::strcmp(env, "0") != 0 && env[0] != 0;
  }();
  return on;
}

}  // namespace

CublasLtGemm::CublasLtGemm() {
  SEAM_CUBLAS_CHECK(cublasLtCreate(&handle_));
  SEAM_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
}

CublasLtGemm::~CublasLtGemm() {
  if (tuner_) {  // destructor: no throw
    cudaStreamSynchronize(tuner_->stream);
    tuner_->timer.reset();
    cudaFree(tuner_->scratch);
  }
  for (auto& [key, plan] : plans_) destroy(plan);
  cudaFree(workspace_);  // destructor: no throw
  cublasLtDestroy(handle_);
}

void CublasLtGemm::destroy(Plan& p) {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  p = Plan{};
}

// Column-major view of the row-major problem: out^T [n_out x n] = W^T-op(A) * x^T(B), with
// A = w as a column-major [n_in x n_out] matrix (ld n_in, op T), B = x as [n_in x n] (ld = row
// stride), C = D = out as [n_out x n] (ld = row stride). The bias runs along n_out, the rows of C.
CublasLtGemm::Plan CublasLtGemm::make_plan(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                                           bool fuse_bias, int n_candidates,
                                           std::vector<cublasLtMatmulHeuristicResult_t>* results) {
  const uint64_t m = uint64_t(w.size(0)), n = uint64_t(x.size(0)), k = uint64_t(w.size(1));
  const cudaDataType_t ab_type = cuda_type(x.dtype), c_type = cuda_type(out.dtype);
  Plan p;
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)));
  SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)));
  if (fuse_bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    const cudaDataType_t bias_type = cuda_type(bias.dtype);
    SEAM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    const void* bp = bias.data;
    SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)));
  }
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, ab_type, k, m, int64_t(k)));
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, ab_type, k, n, x.stride[0]));
  SEAM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, c_type, m, n, out.stride[0]));

  cublasLtMatmulPreference_t pref = nullptr;
  SEAM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const size_t ws = kWorkspaceBytes;
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const uint32_t al_a = uint32_t(alignment(w.data)), al_b = uint32_t(alignment(x.data)),
                 al_c = uint32_t(alignment(out.data));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a)));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b)));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c)));
  SEAM_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c)));
  std::vector<cublasLtMatmulHeuristicResult_t> all(size_t(std::max(n_candidates, 1)));
  int n_results = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, int(all.size()),
                                                           all.data(), &n_results);
  cublasLtMatmulPreferenceDestroy(pref);
  results->clear();
  if (st == CUBLAS_STATUS_SUCCESS)
    for (int i = 0; i < n_results; ++i)
      if (all[size_t(i)].state == CUBLAS_STATUS_SUCCESS && all[size_t(i)].workspaceSize <= kWorkspaceBytes)
        results->push_back(all[size_t(i)]);
  if (!results->empty()) {
    p.algo = (*results)[0].algo;
    p.fused_bias = fuse_bias;
  }
  return p;
}

CublasLtGemm::Plan CublasLtGemm::make_any_plan(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                                               int n_candidates,
                                               std::vector<cublasLtMatmulHeuristicResult_t>* results) {
  Plan p;
  results->clear();
  if (bias.defined() && bias.dtype == out.dtype) {
    p = make_plan(out, x, w, bias, true, n_candidates, results);
    if (results->empty()) destroy(p);
  }
  if (results->empty()) {
    p = make_plan(out, x, w, bias, false, n_candidates, results);
    if (results->empty()) {
      destroy(p);
      throw Error(detail::concat("linear: cuBLASLt has no algorithm for x ", x.shape_str(), " ", dtype_name(x.dtype),
                                 ", w ", w.shape_str(), ", out ", dtype_name(out.dtype)));
    }
  }
  return p;
}

CublasLtGemm::Plan& CublasLtGemm::plan_for(const Key& key, const Tensor& out, const Tensor& x, const Tensor& w,
                                           const Tensor& bias) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  const bool tune = tunes(x);
  std::vector<cublasLtMatmulHeuristicResult_t> cands;
  Plan p = make_any_plan(out, x, w, bias, tune ? tuner_->config.n_candidates : 1, &cands);
  if (tune && !take_cached(key, p)) {
    try {
      tune_plan(key, p, out, x, w, std::move(cands));
    } catch (...) {
      destroy(p);
      throw;
    }
  }
  return plans_.emplace(key, p).first->second;
}

void CublasLtGemm::tune_plan(const Key& key, Plan& p, const Tensor& out, const Tensor& x, const Tensor& w,
                             std::vector<cublasLtMatmulHeuristicResult_t> cands) {
  const Tuning& cfg = tuner_->config;
  const bool off_grid = x.size(0) % kTileFitRows != 0;
  const size_t n_heuristic = cands.size();
  const auto t0 = std::chrono::steady_clock::now();
  const int n_tiles = cfg.tile_space && off_grid && !cands.empty() ? add_tile_candidates(p, out, x, w, &cands) : 0;
  if (cands.size() <= 1) return;  // nothing to choose from: the heuristic's pick stays
  const std::vector<double> us = time_plan(p, out, x, w, cands, cfg.method);
  TuningStats& st = tuner_->stats;
  st.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (us.empty()) {  // the scratch could not hold out
    st.n_skipped++;
    return;
  }
  size_t best = 0;
  for (size_t i = 1; i < us.size(); ++i)
    if (us[i] > 0 && (us[best] <= 0 || us[i] < us[best])) best = i;
  // Within the guard of the heuristic's pick: keep rank 0 (see Tuning::min_gain).
  const double guard = off_grid ? cfg.min_gain_off_grid : cfg.min_gain;
  if (best != 0 && us[0] > 0 && us[best] > us[0] * (1.0 - guard)) best = 0;
  if (us[best] <= 0) {
    st.n_skipped++;
    return;
  }
  p.algo = cands[best].algo;
  st.n_tuned++;
  st.n_changed += best != 0;
  st.n_tile_searched += n_tiles > 0;
  st.n_tile_kept += best >= n_heuristic;
  st.heuristic_us += us[0] > 0 ? us[0] : us[best];
  st.chosen_us += us[best];
  if (tuner_->cache) {
    GemmTuningCache::Algo a;
    static_assert(sizeof(a) == sizeof(p.algo), "cublasLtMatmulAlgo_t is 64 bytes");
    std::memcpy(a.data(), &p.algo, sizeof(a));
    tuner_->cache->put(cache_key(key), {a, us[best]});
  }
  if (log_tuning())
    log::info(
        "gemm autotune M=%lld N=%lld K=%lld: rank %zu of %zu (%zu heuristic, %d tiles), %.1f us "
        "(rank 0: %.1f us)",
        (long long)x.size(0), (long long)w.size(0), (long long)w.size(1), best, us.size(), n_heuristic, n_tiles,
        us[best], us[0]);
}

int CublasLtGemm::add_tile_candidates(const Plan& p, const Tensor& out, const Tensor& x, const Tensor& w,
                                      std::vector<cublasLtMatmulHeuristicResult_t>* cands) {
  const AlgoConfig first = algo_config_of((*cands)[0].algo);
  AlgoSpaceLimits lim;
  lim.algo_id = first.id;
  lim.stages_id = first.stages;
  lim.plain_options = true;
  lim.max_workspace = kWorkspaceBytes;
  const auto space =
      enumerate_algo_space(handle_, p.desc, p.a, p.b, p.c, cuda_type(x.dtype), cuda_type(out.dtype), lim);
  std::vector<cublasLtMatmulHeuristicResult_t> tiles;
  for (const auto& r : space) {
    bool known = false;  // the heuristic may already offer this configuration
    for (const auto& c : *cands) known = known || std::memcmp(&c.algo, &r.algo, sizeof(r.algo)) == 0;
    if (known) continue;
    tiles.push_back(as_candidate(r.algo, r.workspace_bytes, r.waves));
  }
  if (tiles.empty()) return 0;
  GemmTimingMethod brief = tuner_->config.method;
  brief.n_warmup = 1;
  brief.n_reps = 3;
  const auto us = time_plan(p, out, x, w, tiles, brief);
  if (us.size() != tiles.size()) return 0;
  std::vector<size_t> order;
  for (size_t i = 0; i < tiles.size(); ++i)
    if (us[i] > 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return us[a] < us[b]; });
  const size_t keep = std::min(order.size(), size_t(std::max(tuner_->config.tile_candidates, 0)));
  for (size_t i = 0; i < keep; ++i) cands->push_back(tiles[order[i]]);
  return int(keep);
}

bool CublasLtGemm::tunes(const Tensor& x) const {
  if (!tuner_ || (x.dtype != DType::bf16 && x.dtype != DType::f16) || x.size(0) < tuner_->config.min_rows) return false;
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  SEAM_CUDA_CHECK(cudaStreamIsCapturing(tuner_->stream, &cs));
  return cs == cudaStreamCaptureStatusNone;
}

bool CublasLtGemm::reserve_scratch(size_t bytes) {
  Tuner& t = *tuner_;
  bytes = std::max(bytes, t.flush_bytes);
  if (bytes <= t.scratch_bytes) return true;
  SEAM_CUDA_CHECK(cudaStreamSynchronize(t.stream));  // the old scratch may still be in use
  t.timer.reset();
  if (t.scratch) SEAM_CUDA_CHECK(cudaFree(t.scratch));
  t.scratch = nullptr;
  t.scratch_bytes = 0;
  if (cudaMalloc(&t.scratch, bytes) != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky: clear it and go on untuned
    t.scratch = nullptr;
    return false;
  }
  t.scratch_bytes = bytes;
  t.timer = std::make_unique<GemmTimer>(t.stream, t.scratch, t.flush_bytes);
  return true;
}

std::vector<double> CublasLtGemm::time_plan(const Plan& p, const Tensor& out, const Tensor& x, const Tensor& w,
                                            const std::vector<cublasLtMatmulHeuristicResult_t>& cands,
                                            const GemmTimingMethod& m) {
  // The scratch output has out's layout: rows of out.stride[0] elements.
  const size_t out_bytes = size_t((out.size(0) - 1) * out.stride[0] + out.size(1)) * dtype_size(out.dtype);
  if (!reserve_scratch(out_bytes)) return {};
  GemmCall call;
  call.handle = handle_;
  call.desc = p.desc;
  call.a = p.a;
  call.b = p.b;
  call.c = p.c;
  call.a_data = w.data;
  call.b_data = x.data;
  call.d_data = tuner_->scratch;
  call.workspace = workspace_;
  call.workspace_bytes = kWorkspaceBytes;
  std::vector<cublasLtMatmulAlgo_t> algos;
  for (const auto& c : cands) algos.push_back(c.algo);
  return tuner_->timer->medians_us(call, algos, m);
}

void CublasLtGemm::begin_tuning(const Tuning& t, cudaStream_t stream) {
  SEAM_CHECK(t.min_rows >= 1, "gemm autotune: min rows must be >= 1, got ", t.min_rows);
  SEAM_CHECK(t.n_candidates >= 1, "gemm autotune: candidates must be >= 1, got ", t.n_candidates);
  end_tuning();
  tuner_ = std::make_unique<Tuner>();
  tuner_->config = t;
  tuner_->stream = stream;
  tuner_->flush_bytes = l2_flush_bytes();
  if (!reserve_scratch(tuner_->flush_bytes)) {
    tuner_.reset();
    throw Error(
        detail::concat("gemm autotune: no device memory for the ", l2_flush_bytes() >> 20, " MiB L2-flush buffer"));
  }
  if (!t.cache_path.empty()) tuner_->cache = std::make_unique<GemmTuningCache>(t.cache_path, cache_scope(t));
}

std::string CublasLtGemm::cache_scope(const Tuning& t) {
  int dev = 0;
  SEAM_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  SEAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  // The settings that change which algorithm wins; min_rows only decides which plans are tuned.
  return detail::concat(prop.name, ", ", prop.multiProcessorCount, " SMs, cuBLASLt ", cublasLtGetVersion(),
                        ", candidates ", t.n_candidates, ", min_gain ", t.min_gain, "/", t.min_gain_off_grid, ", tiles ",
                        t.tile_space ? t.tile_candidates : 0, ", reps ", t.method.n_reps);
}

std::string CublasLtGemm::cache_key(const Key& key) {
  // The plan's key (sizes, leading dims, dtypes, alignments, bias mode): no pointers, so it
  // names the same plan in every run.
  std::string s;
  for (size_t i = 0; i < key.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(key[i]);
  }
  return s;
}

bool CublasLtGemm::take_cached(const Key& key, Plan& p) {
  if (!tuner_->cache) return false;
  const GemmTuningCache::Entry* e = tuner_->cache->find(cache_key(key));
  if (!e) return false;
  cublasLtMatmulAlgo_t algo;
  static_assert(sizeof(algo) == sizeof(e->algo), "cublasLtMatmulAlgo_t is 64 bytes");
  std::memcpy(&algo, e->algo.data(), sizeof(algo));
  // The entry came from a file: run it only if cuBLASLt accepts it for this plan's descriptors.
  cublasLtMatmulHeuristicResult_t check{};
  const cublasStatus_t st = cublasLtMatmulAlgoCheck(handle_, p.desc, p.a, p.b, p.c, p.c, &algo, &check);
  if (st != CUBLAS_STATUS_SUCCESS || check.workspaceSize > kWorkspaceBytes) {
    tuner_->stats.n_cache_stale++;
    return false;
  }
  p.algo = algo;
  tuner_->stats.n_cached++;
  return true;
}

CublasLtGemm::TuningStats CublasLtGemm::end_tuning() {
  if (!tuner_) return {};
  SEAM_CUDA_CHECK(cudaStreamSynchronize(tuner_->stream));
  if (tuner_->cache) {
    tuner_->stats.cache_saved = tuner_->cache->save();
    tuner_->stats.cache_path = tuner_->cache->path();
  }
  const TuningStats st = tuner_->stats;
  tuner_->timer.reset();
  if (tuner_->scratch) SEAM_CUDA_CHECK(cudaFree(tuner_->scratch));
  tuner_.reset();
  return st;
}

std::vector<CublasLtGemm::TimedAlgo> CublasLtGemm::time_and_destroy(
    Plan p, const Tensor& out, const Tensor& x, const Tensor& w,
    const std::vector<cublasLtMatmulHeuristicResult_t>& cands, const GemmTimingMethod& m, const char* what) {
  std::vector<double> us;
  try {
    us = time_plan(p, out, x, w, cands, m);
  } catch (...) {
    destroy(p);
    throw;
  }
  destroy(p);
  SEAM_CHECK(us.size() == cands.size(), what, ": no device memory for a ", out.shape_str(), " scratch output");
  std::vector<TimedAlgo> r;
  for (size_t i = 0; i < cands.size(); ++i) r.push_back(TimedAlgo{cands[i].algo, cands[i].workspaceSize, us[i]});
  return r;
}

std::vector<CublasLtGemm::TimedAlgo> CublasLtGemm::time_candidates(const Tensor& out, const Tensor& x, const Tensor& w,
                                                                   const Tensor& bias, int n_max,
                                                                   const GemmTimingMethod& m) {
  SEAM_CHECK(tuner_ != nullptr, "time_candidates needs begin_tuning");
  std::vector<cublasLtMatmulHeuristicResult_t> cands;
  Plan p = make_any_plan(out, x, w, bias, n_max, &cands);
  return time_and_destroy(p, out, x, w, cands, m, "time_candidates");
}

std::vector<CublasLtGemm::TimedAlgo> CublasLtGemm::time_algo_space(const Tensor& out, const Tensor& x, const Tensor& w,
                                                                   const Tensor& bias, const AlgoSpaceLimits& limits,
                                                                   const GemmTimingMethod& m, long* n_tried) {
  SEAM_CHECK(tuner_ != nullptr, "time_algo_space needs begin_tuning");
  std::vector<cublasLtMatmulHeuristicResult_t> first;
  Plan p = make_any_plan(out, x, w, bias, 1, &first);  // the descriptors (and bias mode) run() would use
  AlgoSpaceLimits lim = limits;
  lim.max_workspace = std::min(lim.max_workspace == 0 ? kWorkspaceBytes : lim.max_workspace, kWorkspaceBytes);
  std::vector<cublasLtMatmulHeuristicResult_t> cands;
  try {
    for (const auto& r :
         enumerate_algo_space(handle_, p.desc, p.a, p.b, p.c, cuda_type(x.dtype), cuda_type(out.dtype), lim, n_tried))
      cands.push_back(as_candidate(r.algo, r.workspace_bytes, r.waves));
  } catch (...) {
    destroy(p);
    throw;
  }
  return time_and_destroy(p, out, x, w, cands, m, "time_algo_space");
}

std::vector<CublasLtGemm::TimedAlgo> CublasLtGemm::time_algos(const Tensor& out, const Tensor& x, const Tensor& w,
                                                              const Tensor& bias, const std::vector<TimedAlgo>& algos,
                                                              const GemmTimingMethod& m) {
  SEAM_CHECK(tuner_ != nullptr, "time_algos needs begin_tuning");
  std::vector<cublasLtMatmulHeuristicResult_t> first, cands;
  Plan p = make_any_plan(out, x, w, bias, 1, &first);
  for (const TimedAlgo& a : algos) cands.push_back(as_candidate(a.algo, a.workspace_bytes, 0.f));
  return time_and_destroy(p, out, x, w, cands, m, "time_algos");
}

void CublasLtGemm::pin_algo(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                            const cublasLtMatmulAlgo_t& algo) {
  const Key key = key_of(out, x, w, bias);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    std::vector<cublasLtMatmulHeuristicResult_t> first;
    it = plans_.emplace(key, make_any_plan(out, x, w, bias, 1, &first)).first;
  }
  it->second.algo = algo;
}

CublasLtGemm::Key CublasLtGemm::key_of(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias) {
  return {w.size(0),         x.size(0),         w.size(1),           x.stride[0],
          out.stride[0],     int64_t(x.dtype),  int64_t(out.dtype),  bias.defined() ? int64_t(bias.dtype) : -1,
          alignment(w.data), alignment(x.data), alignment(out.data), bias.defined() ? alignment(bias.data) : 0};
}

void CublasLtGemm::run(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias, cudaStream_t stream,
                       bool accumulate) {
  if (x.size(0) == 0 || w.size(0) == 0) return;
  Plan& p = plan_for(key_of(out, x, w, bias), out, x, w, bias);
  if (p.fused_bias) {  // the plan is shared by every bias of this shape: point it at this one
    const void* bp = bias.data;
    SEAM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)));
  }
  const float alpha = 1.f, beta = accumulate ? 1.f : 0.f;
  SEAM_CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc, &alpha, w.data, p.a, x.data, p.b, &beta, out.data, p.c, out.data,
                                   p.c, &p.algo, workspace_, kWorkspaceBytes, stream));
  if (bias.defined() && !p.fused_bias) launch_bias_add(out, bias, stream);
}

}  // namespace seam::cuda
