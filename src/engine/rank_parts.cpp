#include "engine/rank_parts.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/kv_cache_dtype.h"
#include "model/model_registry.h"
#include "model/tp_shard.h"

namespace seam {

RankParts::~RankParts() {
  runner.reset();
  kv.reset();
  model.reset();
  if (backend) backend->set_communicator(nullptr);
  comm.reset();
  backend.reset();
  store.reset();
}

namespace {

// Runs `work`, then (TP) every rank learns whether every rank succeeded; on any failure every
// rank throws the lowest failed rank's error. The failed rank itself rethrows its own.
void agree(Communicator* comm, const char* phase, const std::function<void()>& work) {
  if (!comm) return work();
  std::string mine;
  std::exception_ptr failure;
  try {
    work();
  } catch (const std::exception& e) {
    mine = e.what();
    if (mine.empty()) mine = "unknown error";
    failure = std::current_exception();
  }
  const std::vector<std::string> all = comm->all_gather_bytes(mine);
  if (failure) std::rethrow_exception(failure);
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty())
      throw Error(detail::concat("tp rank ", r, "/", all.size(), " failed while ", phase, ": ", all[r]));
}

int fault_rank() {
  const char* v = std::getenv("SEAM_TP_FAULT_RANK");
  return v && *v ? std::atoi(v) : -1;
}

}  // namespace

RankParts build_rank_parts(const RankPlan& plan, int rank, int store_port) {
  const EngineConfig& cfg = *plan.cfg;
  const TpPlan& tp = plan.tp;
  RankParts p;
  p.rank = rank;
  p.backend = make_backend(cfg.device, rank % tp.ranks_per_node);
  const size_t free_at_start = p.backend->free_memory();
  if (tp.active()) {
    DistInit init;
    init.rank = rank;
    init.size = tp.tp_size;
    init.host = tp.host;
    init.port = store_port;
    init.timeout = tp.timeout;
    p.store = std::make_unique<TcpStore>(tp.host, store_port, tp.timeout);
    p.comm = make_communicator(*p.backend, *p.store, init);
    p.backend->set_communicator(p.comm.get());
    log::info("joined the tensor-parallel group (%d ranks over %d node(s), store %s)", tp.tp_size, tp.nnodes,
              p.store->address().c_str());
  }
  // GEMM tuning runs in the graph warm-ups and ends when the runner seals (capture_graphs).
  // Its scratch is allocated here, before the KV pool is sized, so the pool leaves room for it.
  if (plan.setup.gemm_autotune) p.backend->begin_gemm_tuning(plan.setup.gemm_tuning);
  const ModelConfig shard = shard_model_config(*plan.model, tp.tp_size, rank);
  agree(p.comm.get(), "loading its model shard", [&] {
    if (tp.active() && fault_rank() == rank)
      throw Error("cannot load the model shard: injected start-up fault (SEAM_TP_FAULT_RANK)");
    p.model = create_model(*p.backend, shard, *plan.checkpoint, plan.setup.dtype);
    if (tp.active())
      log::info("model shard: %d of %d q heads, %d KV head(s), %.1f MiB of weights", shard.n_heads,
                plan.model->n_heads, shard.n_kv_heads, double(p.model->weight_bytes()) / (1 << 20));
  });

  // The KV pool holds the rank's KV heads; its slot count is one for the whole group (the one
  // scheduler hands out slots for every rank): the smallest any rank can afford.
  KvPoolShape shape = plan.kv_shape;
  shape.n_kv_heads = shard.n_kv_heads;
  agree(p.comm.get(), "sizing its KV pool", [&] {
    shape.n_slots = kv_pool_slots(cfg, plan.setup, p.backend->device(), free_at_start, p.backend->free_memory(),
                                  p.model->weight_bytes(), KvPool::bytes_per_slot(shape));
  });
  if (p.comm) {
    const std::vector<std::string> all = p.comm->all_gather_bytes(std::to_string(shape.n_slots));
    for (const std::string& s : all) shape.n_slots = std::min(shape.n_slots, int32_t(std::stoll(s)));
  }
  agree(p.comm.get(), "capturing its graphs", [&] {
    p.kv = std::make_unique<KvPool>(*p.backend, shape);
    p.runner = std::make_unique<ModelRunner>(*p.backend, *p.model, *p.kv, plan.sizes, plan.setup.graphs);
    p.runner->capture_graphs();
  });
  const GraphStats& g = p.runner->graph_stats();
  RankParts::Memory mine{uint64_t(p.model->weight_bytes()), uint64_t(KvPool::bytes_per_slot(shape)) * uint64_t(shape.n_slots),
                         uint64_t(g.decode_graph_bytes + g.piecewise_graph_bytes)};
  if (!p.comm) {
    p.group_memory = {mine};
    return p;
  }
  for (const std::string& m : p.comm->all_gather_bytes(detail::concat(mine.weight_bytes, " ", mine.kv_bytes, " ",
                                                                       mine.graph_bytes))) {
    RankParts::Memory r;
    std::istringstream(m) >> r.weight_bytes >> r.kv_bytes >> r.graph_bytes;
    p.group_memory.push_back(r);
  }
  log::info("weights %.1f MiB, KV pool %.1f MiB, graphs %.1f MiB on this rank", double(mine.weight_bytes) / (1 << 20),
            double(mine.kv_bytes) / (1 << 20), double(mine.graph_bytes) / (1 << 20));
  return p;
}

}  // namespace seam
