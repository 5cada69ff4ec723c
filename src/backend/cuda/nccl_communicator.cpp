#include "backend/cuda/nccl_communicator.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/cuda/cuda_backend_impl.h"
#include "backend/cuda/cuda_check.h"
#include "core/error.h"
#include "core/log.h"

#ifdef SEAM_HAVE_NCCL
#include <nccl.h>
#endif

namespace seam {

#ifdef SEAM_HAVE_NCCL
namespace {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(cuda::CudaBackend& backend, TcpStore& store, const DistInit& init)
      : Communicator(store, init), stream_(backend.stream()), device_id_(backend.device_id()) {
    // NVLink multicast (NVLS) off unless the user chose: it reserves memory on every GPU and
    // its setup misbehaves on the lent machines (KINDS.md); the peers' ring/tree paths are used.
    ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
    SEAM_CUDA_CHECK(cudaSetDevice(device_id_));
    ncclUniqueId id{};
    const std::string key = init.prefix + "/nccl_unique_id";
    try {
      if (init.rank == 0) {
        check(ncclGetUniqueId(&id), "ncclGetUniqueId");
        store.set(key, std::string(reinterpret_cast<const char*>(&id), sizeof id));
      } else {
        const std::string v = store.get(key);
        SEAM_CHECK(v.size() == sizeof id, "the NCCL unique id in the store has ", v.size(), " bytes, expected ",
                   sizeof id);
        std::memcpy(&id, v.data(), sizeof id);
      }
    } catch (const DeviceError&) {
      throw;
    } catch (const Error& e) {
      throw Error(label() + ": NCCL bootstrap failed: " + e.what());
    }
    check(ncclCommInitRank(&comm_, init.size, id, init.rank), "ncclCommInitRank");
    log::info("NCCL %d.%d communicator on device %d (NCCL_NVLS_ENABLE=%s)", NCCL_MAJOR, NCCL_MINOR, device_id_,
              std::getenv("NCCL_NVLS_ENABLE"));
  }

  ~NcclCommunicator() override {
    // Unchecked: a destructor must not throw. An aborted communicator is already released.
    if (comm_ && !aborted_) ncclCommDestroy(comm_);
  }

  void abort() override {
    if (!comm_ || aborted_.exchange(true)) return;
    log::error("%s: aborting the NCCL communicator (a collective outlived --dist-timeout)", label().c_str());
    ncclCommAbort(comm_);  // the waiting kernels return; later calls fail (checked: DeviceError)
  }

  void all_reduce_sum(Tensor x) override {
    ensure_live();
    SEAM_CHECK(x.contiguous(), label(), ": all_reduce_sum: tensor must be contiguous");
    check(ncclAllReduce(x.data, x.data, size_t(x.numel()), nccl_type(x.dtype), ncclSum, comm_, stream_),
          "ncclAllReduce");
  }

  void all_gather(Tensor out, Tensor in) override {
    ensure_live();
    SEAM_CHECK(in.contiguous() && out.contiguous() && in.dtype == out.dtype && out.numel() == in.numel() * size(),
               label(), ": all_gather: contiguous tensors of one dtype, out = size x in");
    check(ncclAllGather(in.data, out.data, size_t(in.numel()), nccl_type(in.dtype), comm_, stream_),
          "ncclAllGather");
  }

 private:
  ncclDataType_t nccl_type(DType t) const {
    switch (t) {
      case DType::f32: return ncclFloat32;
      case DType::bf16: return ncclBfloat16;
      case DType::f16: return ncclFloat16;
      default: break;
    }
    throw Error(label() + ": NCCL collectives take float32, bfloat16 or float16 tensors, not " + dtype_name(t));
  }
  // An aborted communicator is freed: no call may reach NCCL with it.
  void ensure_live() const {
    if (aborted_) throw DeviceError(label() + ": the NCCL communicator was aborted (a step outlived --dist-timeout)");
  }
  void check(ncclResult_t r, const char* call) const {
    if (r == ncclSuccess) return;
    const char* last = comm_ ? ncclGetLastError(comm_) : ncclGetLastError(nullptr);
    throw DeviceError(detail::concat(label(), ": NCCL call ", call, " failed: ", ncclGetErrorString(r),
                                     last && *last ? std::string(" (") + last + ")" : std::string()));
  }

  cudaStream_t stream_ = nullptr;
  int device_id_ = 0;
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Backend& backend, TcpStore& store, const DistInit& init) {
  auto* cuda = dynamic_cast<cuda::CudaBackend*>(&backend);
  SEAM_ASSERT(cuda, "make_nccl_communicator needs the CUDA backend");
  return std::make_unique<NcclCommunicator>(*cuda, store, init);
}

#else

std::unique_ptr<Communicator> make_nccl_communicator(Backend&, TcpStore&, const DistInit& init) {
  throw Error(detail::concat("tp rank ", init.rank, "/", init.size,
                             ": --tp-size above 1 on cuda needs NCCL; this build has none (SEAM_NCCL=OFF or nccl.h "
                             "not found)"));
}

#endif

}  // namespace seam
