#include "engine/tp_group.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "runtime/forward_batch_codec.h"

namespace seam {

TpGroup::TpGroup(const RankPlan& plan, int leader_rank) : plan_(plan) {
  const TpPlan& tp = plan.tp;
  port_ = tp.port;
  if (tp.node_rank == 0) {
    // Several nodes: listen on every interface at the given port (HOST is how the others reach us).
    server_ = std::make_unique<TcpStoreServer>(tp.nnodes > 1 ? "0.0.0.0" : tp.host, tp.port);
    port_ = server_->port();
  }
  if (tp.nnodes > 1) channel_ = std::make_unique<TcpStore>(tp.host, port_, tp.timeout);
  const int first = tp.first_local_rank();
  n_alive_ = tp.ranks_per_node - 1;
  for (int r = first; r < first + tp.ranks_per_node; ++r)
    if (r != leader_rank) workers_.emplace_back([this, r] { worker(r); });
  watchdog_ = std::thread([this] { watchdog(); });
}

void TpGroup::watch(Communicator* comm) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.push_back(comm);
}

void TpGroup::watchdog() {
  std::unique_lock<std::mutex> lock(mu_);
  bool fired = false;
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::seconds(1));
    if (fired || !step_in_flight_ || std::chrono::steady_clock::now() - step_start_ < plan_.tp.timeout) continue;
    fired = true;  // the communicators are unusable from here on: the engine is dead
    log::error("a tensor-parallel step has run for more than --dist-timeout (%lld s): a rank died or hangs; "
               "aborting this node's communicators",
               (long long)std::chrono::duration_cast<std::chrono::seconds>(plan_.tp.timeout).count());
    for (Communicator* c : watched_) c->abort();
  }
}

TpGroup::~TpGroup() {
  if (channel_ && plan_.tp.node_rank == 0) {
    try {
      // The other nodes stop. The store (server_) lives until each has taken the message
      // (or 10 s, a dead node never will): they must not see node 0's store close first.
      const std::string key = step_key(n_published_ + 1);
      channel_->set(key, "");
      const auto deadline = std::chrono::steady_clock::now() +
                            std::min<std::chrono::milliseconds>(plan_.tp.timeout, std::chrono::seconds(10));
      while (channel_->add(key + "/acks", 0) < plan_.tp.nnodes - 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const std::exception& e) {
      log::warn("could not tell the other nodes to stop: %s", e.what());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  if (watchdog_.joinable()) watchdog_.join();
}

void TpGroup::worker(int rank) {
  log::set_thread_prefix(detail::concat("tp rank ", rank, "/", plan_.tp.tp_size, ": "));
  RankParts parts;
  try {
    parts = build_rank_parts(plan_, rank, port_);
  } catch (const std::exception& e) {
    // Every rank throws at the same agreement (rank_parts.h): the engine's own rank reports it.
    log::error("start-up failed: %s", e.what());
    std::lock_guard<std::mutex> lock(mu_);
    --n_alive_;
    done_cv_.notify_all();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (parts.comm) watched_.push_back(parts.comm.get());
  }
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || step_ > seen; });
      if (stop_) {
        std::erase(watched_, parts.comm.get());  // the communicator goes with this thread
        return;
      }
      seen = step_;
    }
    std::string error;
    try {
      job_(*parts.runner);
    } catch (const std::exception& e) {
      error = detail::concat("tp rank ", rank, "/", plan_.tp.tp_size, ": ", e.what());
      log::error("step failed: %s", e.what());
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!error.empty() && worker_error_.empty()) worker_error_ = error;
    ++n_done_;
    done_cv_.notify_all();
  }
}

// The step channel. Node 0 sets step n's key; each other node takes it, then counts itself in
// "<key>/acks"; the last to do so removes both keys, so the store holds only steps in flight.
// Node 0 publishes before it runs the step: the other nodes start while it does.
std::optional<ForwardBatch> TpGroup::next_batch(const std::atomic<bool>& stop) {
  SEAM_ASSERT(channel_ && plan_.tp.node_rank > 0);
  const std::string key = step_key(++n_received_);
  std::optional<std::string> msg;
  while (!msg) {
    if (stop) return std::nullopt;
    msg = channel_->try_get(key, std::min<std::chrono::milliseconds>(std::chrono::seconds(1), plan_.tp.timeout));
  }
  const int64_t n_acks = channel_->add(key + "/acks", 1);
  if (msg->empty()) return std::nullopt;  // node 0 waits for every node's ack, then closes the store
  if (n_acks == plan_.tp.nnodes - 1) {      // the last node to take the step frees it
    channel_->remove(key);
    channel_->remove(key + "/acks");
  }
  return decode_forward_batch(*msg);
}

StepResult TpGroup::forward(const ForwardBatch& fb, ModelRunner& leader) {
  if (channel_ && plan_.tp.node_rank == 0) channel_->set(step_key(++n_published_), encode_forward_batch(fb));
  worker_fb_ = fb;  // no worker runs between steps: safe to overwrite
  worker_fb_.while_device_runs = nullptr;  // the leader's host work (the engine's callbacks), on its thread only
  // The workers' samples are never used: let their grammar-constrained rows allow every token.
  if (!worker_fb_.mask_rows.empty())
    worker_fb_.fill_mask = [](int, uint32_t* words, int n_words) { std::fill_n(words, n_words, ~0u); };
  StepResult result;
  run_on_every_rank(
      [&](ModelRunner& r) {
        if (&r == &leader)
          result = r.forward(fb);
        else
          r.forward(worker_fb_);
      },
      leader);
  return result;
}

void TpGroup::run_on_every_rank(const std::function<void(ModelRunner&)>& job, ModelRunner& leader) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    SEAM_CHECK(n_alive_ == int(workers_.size()), "a tensor-parallel worker is gone (it failed at start-up)");
    job_ = job;
    n_done_ = 0;
    worker_error_.clear();
    ++step_;
    step_in_flight_ = true;
    step_start_ = std::chrono::steady_clock::now();
  }
  cv_.notify_all();
  std::exception_ptr failure;
  try {
    job(leader);
  } catch (...) {
    failure = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  // A worker whose collective waits for a dead peer returns after --dist-timeout with an error.
  done_cv_.wait(lock, [&] { return n_done_ == int(workers_.size()); });
  step_in_flight_ = false;
  if (failure) std::rethrow_exception(failure);
  if (!worker_error_.empty()) throw DeviceError(worker_error_);
}

}  // namespace seam
