// CudaBackend: construction, memory, copies, graphs, and the public factory.
// The ops' boundary checks and launches are in cuda_backend_ops.cpp.
#include "backend/cuda/cuda_backend.h"

#include <cstdio>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/diagnostic_switch.h"
#include "backend/cuda/fill.h"
#include "core/log.h"

namespace seam {

bool cuda_device_present(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = detail::concat("no usable CUDA device: ", cudaGetErrorString(e));
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device is visible";
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(int device_id) { return std::make_unique<cuda::CudaBackend>(device_id); }

void* cuda_backend_stream(Backend& backend) {
  auto* cb = dynamic_cast<cuda::CudaBackend*>(&backend);
  SEAM_CHECK(cb != nullptr, "cuda_backend_stream: backend '", backend.name(), "' is not the CUDA backend");
  return cb->stream();
}

namespace cuda {

namespace {
struct CudaGraph final : Graph {
  cudaGraphExec_t exec = nullptr;
  ~CudaGraph() override {
    if (exec) cudaGraphExecDestroy(exec);  // destructor: no throw
  }
};
}  // namespace

CudaBackend::CudaBackend(int device_id) : device_id_(device_id) {
  // First, so that a bad value throws before anything is allocated.
  fused_post_norm_ = env_choice("SEAM_DECODE_FUSED_POSTNORM", 1, {0, 1}) == 1;
  // The batch-1 MoE route / combine and q/k-norm fusions: off by default, measured slower on the
  // H200 (cuda_backend_impl.h).
  fused_moe_route_ = env_choice("SEAM_MOE_FUSED_ROUTE", 0, {0, 1}) == 1;
  fused_moe_combine_ = env_choice("SEAM_MOE_FUSED_COMBINE", 0, {0, 1}) == 1;
  fused_qk_norm_ = env_choice("SEAM_DECODE_FUSED_QK_NORM", 0, {0, 1}) == 1;
  fp8_gemm_mode_ = Fp8GemmMode(env_name_choice("SEAM_FP8_GEMM", 4, {"auto", "wgmma", "cublaslt", "ws", "ws-lt"}));
  fp8_skinny_ = Fp8SkinnyMode(env_name_choice("SEAM_FP8_SKINNY", 0, {"auto", "on", "off"}));
  fp8_gated_epilogue_ = env_choice("SEAM_FP8_GATED_EPILOGUE", 1, {0, 1}) == 1;
  fp8_gated_lt_ = env_name_choice("SEAM_FP8_GATED_ROUTE", 1, {"ws", "lt"}) == 1;
  fp8_qkv_rope_fused_ = env_choice("SEAM_FP8_QKV_ROPE_FUSED", 1, {0, 1}) == 1;
  fp8_act_skip_ = env_choice("SEAM_FP8_ACT_SKIP", 1, {0, 1}) == 1;
  fp8_norm_epilogue_ = env_choice("SEAM_FP8_NORM_EPILOGUE", 1, {0, 1}) == 1;
  const int fp8_gemv = env_name_choice("SEAM_FP8_GEMV", 0, {"auto", "mma", "fma"});
  int n = 0;
  SEAM_CUDA_CHECK(cudaGetDeviceCount(&n));
  SEAM_CHECK(device_id >= 0 && device_id < n, "--device-id ", device_id, ": only ", n, " CUDA device(s) visible");
  SEAM_CUDA_CHECK(cudaSetDevice(device_id));
  cudaDeviceProp prop{};
  SEAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_id));
  n_sms_ = prop.multiProcessorCount;
  const bool e4m3_mma = prop.major * 10 + prop.minor >= 89;  // mma.sync on E4M3 operands
  SEAM_CHECK(fp8_gemv != 1 || e4m3_mma, "SEAM_FP8_GEMV=mma: needs E4M3 tensor cores (compute capability 8.9+), ",
             prop.name, " is ", prop.major, ".", prop.minor);
  fp8_gemv_kernel_ = fp8_gemv == 2 || !e4m3_mma ? Fp8GemvKernel::fma : Fp8GemvKernel::mma;
  device_name_ = prop.name;
  SEAM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  gemm_ = std::make_unique<CublasLtGemm>();
  SEAM_CUDA_CHECK(cudaMalloc(&attention_scratch_, kAttentionScratchBytes));
  SEAM_CUDA_CHECK(cudaMalloc(&attention_counters_, kAttentionCounters * sizeof(int)));
  // On stream_ (non-blocking: it does not wait for the legacy default stream) and finished here.
  SEAM_CUDA_CHECK(cudaMemsetAsync(attention_counters_, 0, kAttentionCounters * sizeof(int), stream_));
  SEAM_CUDA_CHECK(cudaMalloc(&post_norm_counters_, kPostNormCounters * sizeof(unsigned)));
  SEAM_CUDA_CHECK(cudaMemsetAsync(post_norm_counters_, 0, kPostNormCounters * sizeof(unsigned), stream_));
  SEAM_CUDA_CHECK(cudaMalloc(&moe_tickets_, 2 * kMoeTickets * sizeof(unsigned)));
  SEAM_CUDA_CHECK(cudaMalloc(&qk_counters_, 2 * kQkCounters * sizeof(unsigned)));
  SEAM_CUDA_CHECK(cudaMemsetAsync(qk_counters_, 0, 2 * kQkCounters * sizeof(unsigned), stream_));
  SEAM_CUDA_CHECK(cudaMemsetAsync(moe_tickets_, 0, 2 * kMoeTickets * sizeof(unsigned), stream_));
  SEAM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  SEAM_CUDA_CHECK(cudaStreamCreateWithFlags(&side_stream_, cudaStreamNonBlocking));
  SEAM_CUDA_CHECK(cudaEventCreateWithFlags(&fork_event_, cudaEventDisableTiming));
  SEAM_CUDA_CHECK(cudaEventCreateWithFlags(&join_event_, cudaEventDisableTiming));
  SEAM_CUDA_CHECK(cudaEventCreate(&timer_start_));  // timing events (not cudaEventDisableTiming)
  SEAM_CUDA_CHECK(cudaEventCreate(&timer_stop_));
  SEAM_CUDA_CHECK(cudaEventCreateWithFlags(&forward_mark_, cudaEventDisableTiming));
}

CudaBackend::~CudaBackend() {
  // Destructor: errors cannot be reported; release in reverse order.
  if (stream_) cudaStreamSynchronize(stream_);
  gemm_.reset();
  cudaFree(attention_scratch_);
  cudaFree(attention_counters_);
  cudaFree(post_norm_counters_);
  cudaFree(moe_tickets_);
  cudaFree(qk_counters_);
  if (forward_mark_) cudaEventDestroy(forward_mark_);
  if (timer_stop_) cudaEventDestroy(timer_stop_);
  if (timer_start_) cudaEventDestroy(timer_start_);
  if (join_event_) cudaEventDestroy(join_event_);
  if (fork_event_) cudaEventDestroy(fork_event_);
  if (side_stream_) {
    cudaStreamSynchronize(side_stream_);
    cudaStreamDestroy(side_stream_);
  }
  if (stream_) cudaStreamDestroy(stream_);
}

std::string CudaBackend::name() const { return "cuda:" + std::to_string(device_id_) + " (" + device_name_ + ")"; }

void* CudaBackend::alloc(size_t bytes) {
  SEAM_CHECK(!capturing_, "cuda alloc during graph capture");
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw Error(
        detail::concat("cuda: out of device memory allocating ", bytes, " bytes (", free_memory(), " bytes free)"));
  }
  SEAM_CUDA_CHECK(e);
  return p;
}

void CudaBackend::release(void* p) {
  if (p) SEAM_CUDA_CHECK(cudaFree(p));
}

void* CudaBackend::alloc_host(size_t bytes) {
  void* p = nullptr;
  SEAM_CUDA_CHECK(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void CudaBackend::release_host(void* p) {
  if (p) SEAM_CUDA_CHECK(cudaFreeHost(p));
}

size_t CudaBackend::free_memory() const {
  size_t free_b = 0, total_b = 0;
  SEAM_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

void CudaBackend::copy_h2d(void* dst, const void* src, size_t bytes) {
  if (bytes) SEAM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
}
void CudaBackend::copy_d2h(void* dst, const void* src, size_t bytes) {
  if (bytes) SEAM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
}
void CudaBackend::copy_d2d(void* dst, const void* src, size_t bytes) {
  if (bytes) SEAM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::fill(Tensor t, float value) {
  SEAM_CHECK(t.device == Device::cuda, "fill: tensor is not on the cuda device");
  SEAM_CHECK(t.contiguous(), "fill: tensor must be contiguous");
  launch_fill(t, value, stream_);
}

void CudaBackend::fill_random(Tensor t, const RandomFill& f) {
  SEAM_CHECK(t.device == Device::cuda, "fill_random: tensor is not on the cuda device");
  SEAM_CHECK(t.contiguous(), "fill_random: tensor must be contiguous");
  launch_fill_random(t, f, stream_);
}

void CudaBackend::synchronize() { SEAM_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

// ---------------------------------------------------------------- graphs

void CudaBackend::begin_capture() {
  SEAM_ASSERT(!capturing_, "nested capture");
  SEAM_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

std::unique_ptr<Graph> CudaBackend::end_capture() {
  SEAM_ASSERT(capturing_, "end_capture without begin_capture");
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  SEAM_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  auto g = std::make_unique<CudaGraph>();
  const cudaError_t e = cudaGraphInstantiate(&g->exec, graph, 0);
  cudaGraphDestroy(graph);  // the exec keeps what it needs
  SEAM_CUDA_CHECK(e);
  return g;
}

void CudaBackend::replay(const Graph& g) {
  SEAM_ASSERT(!capturing_, "replay while capturing");
  const auto* cg = dynamic_cast<const CudaGraph*>(&g);
  SEAM_ASSERT(cg != nullptr, "replay of a graph another backend recorded");
  SEAM_CUDA_CHECK(cudaGraphLaunch(cg->exec, stream_));
}

// ---------------------------------------------------------------- start-up

void CudaBackend::begin_gemm_tuning(const GemmTuning& t) {
  CublasLtGemm::Tuning g;
  g.min_rows = t.min_rows;
  g.n_candidates = t.n_candidates;
  // SEAM_GEMM_TILE_SPACE=0: time only the heuristic's candidates (a diagnostic switch).
  g.tile_space = env_choice("SEAM_GEMM_TILE_SPACE", 1, {0, 1}) == 1;
  g.cache_path = t.cache_path;
  gemm_->begin_tuning(g, stream_);
}

void CudaBackend::end_startup() {
  if (!gemm_->tuning()) return;
  const CublasLtGemm::TuningStats st = gemm_->end_tuning();
  const double gain = st.heuristic_us > 0 ? 100.0 * (1.0 - st.chosen_us / st.heuristic_us) : 0.0;
  log::info(
      "gemm autotune: %d plans tuned in %.2f s, %d changed algorithm (-%.1f %% of their GEMM time; "
      "%d of %d tile-searched plans kept a tile outside the heuristic's list), %d skipped%s",
      st.n_tuned, st.seconds, st.n_changed, gain, st.n_tile_kept, st.n_tile_searched, st.n_skipped,
      st.n_tuned + st.n_skipped + st.n_cached == 0
          ? " (plans are tuned in graph warm-ups: graphs off, or no GEMM had enough rows)"
          : "");
  if (!st.cache_path.empty())
    log::info("gemm autotune cache %s: %d plans taken from it%s, %s", st.cache_path.c_str(), st.n_cached,
              st.n_cache_stale > 0 ? detail::concat(" (", st.n_cache_stale, " stale entries re-tuned)").c_str() : "",
              st.cache_saved ? (st.n_tuned > 0 ? "new results saved" : "nothing new") : "not saved");
}

// ---------------------------------------------------------------- step timer

void CudaBackend::timer_begin() {
  SEAM_ASSERT(!capturing_, "step timer marked during graph capture (the mark would be baked into the graph)");
  SEAM_CUDA_CHECK(cudaEventRecord(timer_start_, stream_));
  timer_stopped_ = false;
}

void CudaBackend::timer_end() {
  SEAM_ASSERT(!capturing_, "step timer marked during graph capture (the mark would be baked into the graph)");
  SEAM_CUDA_CHECK(cudaEventRecord(timer_stop_, stream_));
  timer_stopped_ = true;
}

double CudaBackend::timer_elapsed_ms() const {
  SEAM_ASSERT(timer_stopped_, "timer_elapsed_ms without timer_begin and timer_end");
  float ms = 0;
  // Both events have completed once the stream was synchronized: no wait here.
  SEAM_CUDA_CHECK(cudaEventElapsedTime(&ms, timer_start_, timer_stop_));
  return double(ms);
}

void CudaBackend::mark_forward() {
  SEAM_ASSERT(!capturing_, "forward mark recorded during graph capture (it would be baked into the graph)");
  SEAM_CUDA_CHECK(cudaEventRecord(forward_mark_, stream_));
}

bool CudaBackend::forward_done() {
  const cudaError_t e = cudaEventQuery(forward_mark_);
  if (e == cudaErrorNotReady) return false;
  SEAM_CUDA_CHECK(e);
  return true;
}

}  // namespace cuda
}  // namespace seam
