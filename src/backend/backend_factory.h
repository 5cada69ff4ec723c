// Creates the backend for a device. The CUDA backend exists only in builds
// with SEAM_CUDA; asking for it elsewhere is a clear error.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/communicator.h"

namespace seam {

bool cuda_compiled();
// True when the CUDA backend is compiled in and a GPU is visible; `why` says why not.
bool cuda_device_available(std::string* why = nullptr);
std::unique_ptr<Backend> make_backend(Device device, int device_id = 0);
// Whether this build has the collectives engine of `device` (Gloo for cpu, NCCL for cuda).
bool collectives_compiled(Device device);
// The collectives engine of `backend`'s device for rank init.rank of init.size: Gloo on the
// cpu, NCCL on cuda (on the backend's stream). Returns once every rank has joined; throws
// seam::Error naming the rank when the engine is not built in or the rendezvous fails.
std::unique_ptr<Communicator> make_communicator(Backend& backend, TcpStore& store, const DistInit& init);

}  // namespace seam
