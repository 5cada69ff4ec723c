#include "backend/backend_factory.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/gloo_communicator.h"
#include "core/error.h"
#ifdef SEAM_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/nccl_communicator.h"
#endif

namespace seam {

bool cuda_compiled() {
#ifdef SEAM_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_device_available(std::string* why) {
#ifdef SEAM_HAVE_CUDA
  return cuda_device_present(why);
#else
  if (why) *why = "seam was built without the CUDA backend (SEAM_CUDA=OFF or no nvcc)";
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(Device device, int device_id) {
  if (device == Device::cpu) return std::make_unique<CpuBackend>();
#ifdef SEAM_HAVE_CUDA
  std::string why;
  SEAM_CHECK(cuda_device_present(&why), "--device cuda: ", why);
  return make_cuda_backend(device_id);
#else
  (void)device_id;
  throw Error("--device cuda: seam was built without the CUDA backend");
#endif
}

bool collectives_compiled(Device device) {
  if (device == Device::cpu) return gloo_compiled();
#if defined(SEAM_HAVE_CUDA) && defined(SEAM_HAVE_NCCL)
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Communicator> make_communicator(Backend& backend, TcpStore& store, const DistInit& init) {
  if (backend.device() == Device::cpu) return make_gloo_communicator(store, init);
#ifdef SEAM_HAVE_CUDA
  return make_nccl_communicator(backend, store, init);
#else
  throw Error("--device cuda: seam was built without the CUDA backend");
#endif
}

}  // namespace seam
