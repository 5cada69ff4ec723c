#include "backend/cpu/gloo_communicator.h"

#include "core/error.h"

#ifdef SEAM_HAVE_GLOO
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#endif

namespace seam {

#ifdef SEAM_HAVE_GLOO
namespace {

// Gloo's rendezvous store, backed by the group's TcpStore (this Debian Gloo has no TCPStore).
class StoreAdapter final : public gloo::rendezvous::Store {
 public:
  StoreAdapter(TcpStore& store, std::string prefix) : store_(store), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string v = store_.get(prefix_ + key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string>& keys) override {
    for (const std::string& k : keys) store_.get(prefix_ + k);  // TcpStore::get waits, with its timeout
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override { wait(keys); }

 private:
  TcpStore& store_;
  std::string prefix_;
};

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(TcpStore& store, const DistInit& init) : Communicator(store, init) {
    try {
      gloo::transport::tcp::attr attr;
      // Loopback for one node; across nodes the address the store's host resolves from.
      attr.hostname = init.host == "127.0.0.1" || init.host == "localhost" ? "127.0.0.1" : local_hostname();
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(init.rank, init.size);
      ctx->setTimeout(init.timeout);
      StoreAdapter adapter(store, init.prefix + "/gloo/");
      ctx->connectFullMesh(adapter, device_);
      context_ = std::move(ctx);
    } catch (const std::exception& e) {
      throw Error(label() + ": Gloo rendezvous failed: " + e.what());
    }
  }

  void all_reduce_sum(Tensor x) override {
    check_f32(x, "all_reduce_sum");
    try {
      gloo::AllreduceOptions o(context_);
      o.setOutput(x.ptr<float>(), size_t(x.numel()));
      o.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      o.setTag(next_tag());
      o.setTimeout(init().timeout);
      gloo::allreduce(o);
    } catch (const std::exception& e) {
      throw DeviceError(label() + ": all_reduce_sum failed (a peer rank died or timed out): " + e.what());
    }
  }

  void all_gather(Tensor out, Tensor in) override {
    check_f32(in, "all_gather");
    check_f32(out, "all_gather");
    SEAM_ASSERT(out.numel() == in.numel() * size());
    try {
      gloo::AllgatherOptions o(context_);
      o.setInput(in.ptr<float>(), size_t(in.numel()));
      o.setOutput(out.ptr<float>(), size_t(out.numel()));
      o.setTag(next_tag());
      o.setTimeout(init().timeout);
      gloo::allgather(o);
    } catch (const std::exception& e) {
      throw DeviceError(label() + ": all_gather failed (a peer rank died or timed out): " + e.what());
    }
  }

 private:
  static std::string local_hostname() {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    return name;
  }
  void check_f32(const Tensor& t, const char* what) const {
    SEAM_CHECK(t.dtype == DType::f32 && t.contiguous(), label(), ": ", what,
               ": the Gloo communicator takes contiguous float32 tensors");
  }
  // Collectives on one context are matched by tag and order; a fresh tag per call keeps a
  // late message of one step from being taken for the next.
  uint32_t next_tag() { return n_calls_++ & 0xffffff; }

  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  uint32_t n_calls_ = 0;
};

}  // namespace

bool gloo_compiled() { return true; }

std::unique_ptr<Communicator> make_gloo_communicator(TcpStore& store, const DistInit& init) {
  return std::make_unique<GlooCommunicator>(store, init);
}

#else

bool gloo_compiled() { return false; }

std::unique_ptr<Communicator> make_gloo_communicator(TcpStore&, const DistInit& init) {
  throw Error("tp rank " + std::to_string(init.rank) + "/" + std::to_string(init.size) +
              ": --tp-size above 1 on the cpu backend needs Gloo; this build has none (install libgloo-dev and "
              "reconfigure)");
}

#endif

}  // namespace seam
