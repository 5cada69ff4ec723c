// NcclCommunicator: the CUDA backend's collectives (backend/communicator.h) over NCCL, on the
// backend's stream, so a decode graph or a piecewise graph captured on that stream records
// them like its kernels (NCCL >= 2.9 supports stream capture). Bootstrap: rank 0 creates the
// NCCL unique id and publishes it in the group's TcpStore; every rank reads it and calls
// ncclCommInitRank, the same on one node and across nodes. NVLink multicast (NVLS) is left off
// (NCCL_NVLS_ENABLE=0 unless the user set it) before the communicator is created.
//
// Every NCCL call is checked: a failure throws DeviceError naming the rank, the call and
// NCCL's own last error. Built where nccl.h and libnccl are found (SEAM_HAVE_NCCL); elsewhere
// make_nccl_communicator throws a clear error.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "backend/communicator.h"

namespace seam {

// `backend` must be the CUDA backend of this rank's device.
std::unique_ptr<Communicator> make_nccl_communicator(Backend& backend, TcpStore& store, const DistInit& init);

}  // namespace seam
