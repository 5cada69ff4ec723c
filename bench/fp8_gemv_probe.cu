// seam_fp8_gemv_probe: where one batch-1 FP8 GEMV launch's time goes. The tensor-core GEMV
// (fp8_gemv_mma.cu) is compiled into this binary with SEAM_FP8_GEMV_PROBE, so thread 0 of every
// block records %globaltimer at the kernel's phase boundaries (fp8_gemv_probe.cuh). For
// Llama-3.1-8B's four projections at batch 1 (per-channel E4M3 weights, dynamic per-token
// activations, the decode step's fusions: norm on qkv and gate_up, GLU on gate_up), each launch
// runs alone with a cold L2 (a 256 MB memset before it), and the table gives, over the blocks,
// the median and the last block's time of each phase mark from the first block's start, next
// to the launch's event-timed duration and its byte floor. Then two decode layers' four GEMVs
// chained in one graph as a step runs them (probe_chain): each launch's marks from the previous
// launch's last block exit, which shows the PDL hand-over. Usage: seam_fp8_gemv_probe [runs].
#include <cstdlib>

#include "backend/cuda/fp8_gemv_probe.cuh"
#include "kernel_bench.h"

namespace fd = seam::cuda::fp8_gemv_detail;
using namespace seam;
using namespace seam::kbench;

namespace {

const char* kPhaseName[] = {"entry", "waited", "staged", "coded", "1st sweep", "streamed", "stored", "exit"};
constexpr int kTimed = 8;  // phases 0..7 are times

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

// One read of the marks ([slot][block][phase], fp8_gemv_probe.cuh); a block that never exited did
// not run in that slot's launch.
struct Marks {
  std::vector<unsigned long long> ns, clk;
  Marks() { fd::fp8_gemv_probe_read(ns, clk); }
  static size_t idx(int slot, int blk, int ph) {
    return (size_t(slot) * fd::kProbeBlocks + size_t(blk)) * fd::kProbePhases + size_t(ph);
  }
  unsigned long long at(int slot, int blk, int ph) const { return ns[idx(slot, blk, ph)]; }
  bool live(int slot, int blk) const { return at(slot, blk, fd::kProbeExit) != 0; }
  // The launch's first block entry and last block exit, ns.
  double first_entry(int slot) const {
    double t = 1e300;
    for (int blk = 0; blk < fd::kProbeBlocks; ++blk)
      if (live(slot, blk)) t = std::min(t, double(at(slot, blk, fd::kProbeEntry)));
    return t;
  }
  double last_exit(int slot) const {
    double t = 0;
    for (int blk = 0; blk < fd::kProbeBlocks; ++blk)
      if (live(slot, blk)) t = std::max(t, double(at(slot, blk, fd::kProbeExit)));
    return t;
  }
  // Every live block's mark `ph`, us after `base` (ns).
  std::vector<double> from(int slot, int ph, double base) const {
    std::vector<double> v;
    for (int blk = 0; blk < fd::kProbeBlocks; ++blk)
      if (live(slot, blk)) v.push_back((double(at(slot, blk, ph)) - base) / 1000.0);
    return v;
  }
};

struct Case {
  const char* name;
  int64_t n_out, n_in;
  bool glu, norm;
};

void probe_case(Bench& b, const Case& c, int runs, Tensor& flush) {
  const double w_bytes = double(c.n_out * c.n_in);
  const int copies = std::max(2, int(std::ceil(3 * kL2Bytes / w_bytes)));
  const std::vector<Fp8Weight> ws = fp8_weights(b, c.n_out, c.n_in, copies);
  const Tensor x = b.random(DType::bf16, {1, c.n_in});
  const int64_t n_out = c.glu ? c.n_out / 2 : c.n_out;
  const Tensor out = b.alloc(DType::bf16, {1, n_out});
  cuda::Fp8GemvFusion f;
  f.glu = c.glu;
  if (c.norm) {
    f.norm_weight = b.random(DType::bf16, {c.n_in});
    f.eps = 1e-5f;
  }
  fd::fp8_gemv_probe_set_slot(0);
  auto launch = [&](int i) {
    cuda::launch_fp8_gemv(out, x, ws[size_t(i % copies)], Tensor{}, false, b.stream(), f, cuda::Fp8GemvKernel::mma);
  };
  const double graph_us = b.time_us(launch);  // as seam_kernel_bench times it: 10 in a graph, weights cycled

  cudaEvent_t e0, e1;
  SEAM_CUDA_CHECK(cudaEventCreate(&e0));
  SEAM_CUDA_CHECK(cudaEventCreate(&e1));
  // [phase] -> per run: the median block's and the last block's mark (us from the first entry)
  std::vector<std::vector<double>> med(kTimed), last(kTimed), step(kTimed);
  std::vector<double> event_us, blocks_v, tiles_max, ns_per_clk;
  for (int r = 0; r < runs; ++r) {
    SEAM_CUDA_CHECK(cudaMemsetAsync(flush.data, r & 0xff, flush.nbytes(), b.stream()));
    fd::fp8_gemv_probe_clear();
    SEAM_CUDA_CHECK(cudaEventRecord(e0, b.stream()));
    launch(r);
    SEAM_CUDA_CHECK(cudaEventRecord(e1, b.stream()));
    SEAM_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    SEAM_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    event_us.push_back(double(ms) * 1000);
    const Marks mk;  // slot 0
    int n_blocks = 0, max_tiles = 0;
    for (int blk = 0; blk < fd::kProbeBlocks; ++blk)
      if (mk.live(0, blk)) {
        ++n_blocks;
        max_tiles = std::max(max_tiles, int(mk.at(0, blk, fd::kProbeTiles)));
        const double dc = double(mk.clk[Marks::idx(0, blk, fd::kProbeExit)] - mk.clk[Marks::idx(0, blk, 0)]);
        const double dn = double(mk.at(0, blk, fd::kProbeExit) - mk.at(0, blk, 0));
        if (dc > 0) ns_per_clk.push_back(dn / dc);
      }
    blocks_v.push_back(n_blocks);
    tiles_max.push_back(max_tiles);
    const double t0 = mk.first_entry(0);
    for (int ph = 0; ph < kTimed; ++ph) {
      const std::vector<double> v = mk.from(0, ph, t0);
      med[size_t(ph)].push_back(pct(v, 0.5));
      last[size_t(ph)].push_back(pct(v, 1.0));
      if (ph > 0) {  // each block's step from its own mark before
        const std::vector<double> before = mk.from(0, ph - 1, t0);
        std::vector<double> d(v.size());
        for (size_t i = 0; i < v.size(); ++i) d[i] = v[i] - before[i];
        step[size_t(ph)].push_back(pct(d, 0.5));
      }
    }
  }
  SEAM_CUDA_CHECK(cudaEventDestroy(e0));
  SEAM_CUDA_CHECK(cudaEventDestroy(e1));
  const double floor_us = w_bytes / 4.3e12 * 1e6;
  std::printf("\n### %s: N=%lld K=%lld%s%s  blocks %g, tiles a block <= %g\n", c.name, (long long)c.n_out,
              (long long)c.n_in, c.glu ? " +GLU" : "", c.norm ? " +norm" : "", pct(blocks_v, 0.5), pct(tiles_max, 0.5));
  std::printf("graph-timed %.1f us; cold single launch (event) median %.1f us; floor %.1f us (4.3 TB/s); "
              "globaltimer ns/clock %.3f\n",
              graph_us, pct(event_us, 0.5), floor_us, pct(ns_per_clk, 0.5));
  std::printf("| mark | median block, us from the first entry | last block | median block's step from the mark before |\n");
  std::printf("|---|---|---|---|\n");
  for (int ph = 0; ph < kTimed; ++ph)
    std::printf("| %-10s | %6.2f | %6.2f | %6.2f |\n", kPhaseName[ph], pct(med[size_t(ph)], 0.5),
                pct(last[size_t(ph)], 0.5), ph ? pct(step[size_t(ph)], 0.5) : 0.0);
  std::fflush(stdout);
  b.release_all();
}

// Two decode layers' GEMVs chained as a step runs them (qkv + norm, o += , gate_up + norm + GLU,
// down +=; each reads what the one before wrote, so x comes from L2), captured in one graph with
// PDL and replayed: each launch writes its own slot, and the table gives its marks from the
// previous launch's last block exit (negative: before it, under PDL). The attention between
// qkv and o is left out (o reads a fixed input), so o's wait follows qkv directly.
void probe_chain(Bench& b, int runs) {
  struct Stage {
    const char* name;
    int64_t n_out, n_in;
    bool glu, norm, accumulate;
  };
  const Stage stages[] = {{"qkv_proj", kQkv, kHidden, false, true, false},
                          {"o_proj", kHidden, kHeads * kHeadDim, false, false, true},
                          {"gate_up_proj", 2 * kInter, kHidden, true, true, false},
                          {"down_proj", kHidden, kInter, false, false, true}};
  constexpr int kLayers = 2, kLaunches = kLayers * 4;
  static_assert(kLaunches <= fd::kProbeSlots, "one slot a launch");
  const Tensor resid = b.random(DType::bf16, {1, kHidden}), attn = b.random(DType::bf16, {1, kHeads * kHeadDim});
  const Tensor qkv = b.alloc(DType::bf16, {1, kQkv}), act = b.alloc(DType::bf16, {1, kInter});
  const Tensor norm_w = b.random(DType::bf16, {kHidden});
  std::vector<Fp8Weight> w;
  for (int i = 0; i < kLaunches; ++i) {
    const Stage& st = stages[i % 4];
    w.push_back(fp8_weights(b, st.n_out, st.n_in, 1)[0]);  // its own copy: the weights come from memory
  }
  auto launch = [&](int i) {
    const Stage& st = stages[i % 4];
    cuda::Fp8GemvFusion f;
    f.glu = st.glu;
    if (st.norm) {
      f.norm_weight = norm_w;
      f.eps = 1e-5f;
    }
    const Tensor& x = i % 4 == 0 || i % 4 == 2 ? resid : i % 4 == 1 ? attn : act;
    const Tensor& out = i % 4 == 0 ? qkv : i % 4 == 2 ? act : resid;
    fd::fp8_gemv_probe_set_slot(i);
    cuda::launch_fp8_gemv(out, x, w[size_t(i)], Tensor{}, st.accumulate, b.stream(), f, cuda::Fp8GemvKernel::mma);
  };
  for (int i = 0; i < kLaunches; ++i) launch(i);  // host-side set-up before the capture
  b.gpu().synchronize();
  b.gpu().begin_capture();
  for (int i = 0; i < kLaunches; ++i) launch(i);
  auto graph = b.gpu().end_capture();
  for (int r = 0; r < 3; ++r) b.gpu().replay(*graph);
  b.gpu().synchronize();
  // [launch][mark] -> per run: the median block's mark and the last block's, from the previous
  // launch's last exit (the first launch: from its own first entry).
  std::vector<std::vector<std::vector<double>>> med(kLaunches, std::vector<std::vector<double>>(kTimed)),
      last = med, first = med;
  for (int r = 0; r < runs; ++r) {
    fd::fp8_gemv_probe_clear();
    b.gpu().replay(*graph);
    b.gpu().synchronize();
    const Marks mk;
    for (int i = 0; i < kLaunches; ++i) {
      const double base = i == 0 ? mk.first_entry(0) : mk.last_exit(i - 1);
      for (int ph = 0; ph < kTimed; ++ph) {
        const std::vector<double> v = mk.from(i, ph, base);
        med[size_t(i)][size_t(ph)].push_back(pct(v, 0.5));
        last[size_t(i)][size_t(ph)].push_back(pct(v, 1.0));
        first[size_t(i)][size_t(ph)].push_back(pct(v, 0.0));
      }
    }
  }
  std::printf("\n### chained: %d layers' FP8 GEMVs in one graph (PDL), %d replays; us from the previous launch's last exit\n",
              kLayers, runs);
  std::printf("| launch | first entry | median waited | median coded | median 1st sweep | median streamed | median stored | "
              "last exit | floor |\n|---|---|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < kLaunches; ++i) {
    const Stage& st = stages[i % 4];
    std::printf("| %d %-12s | %6.2f | %6.2f | %6.2f | %6.2f | %6.2f | %6.2f | %6.2f | %5.1f |\n", i / 4, st.name,
                pct(first[size_t(i)][fd::kProbeEntry], 0.5), pct(med[size_t(i)][fd::kProbeWaited], 0.5),
                pct(med[size_t(i)][fd::kProbeCoded], 0.5), pct(med[size_t(i)][fd::kProbeFirstSweep], 0.5),
                pct(med[size_t(i)][fd::kProbeStreamed], 0.5), pct(med[size_t(i)][fd::kProbeStored], 0.5),
                pct(last[size_t(i)][fd::kProbeExit], 0.5), double(st.n_out * st.n_in) / 4.3e12 * 1e6);
  }
  std::fflush(stdout);
  b.release_all();
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 20;
  Bench b;
  Tensor flush = b.alloc(DType::bf16, {int64_t(128) << 20});  // 256 MB: past the 50 MB L2
  const Case cases[] = {{"qkv_proj", kQkv, kHidden, false, true},
                        {"o_proj", kHidden, kHeads * kHeadDim, false, false},
                        {"gate_up_proj", 2 * kInter, kHidden, true, true},
                        {"down_proj", kHidden, kInter, false, false}};
  for (const Case& c : cases) {
    probe_case(b, c, runs, flush);  // ends with release_all: the flush buffer too
    flush = b.alloc(DType::bf16, {int64_t(128) << 20});
  }
  probe_chain(b, runs);
  return 0;
}
