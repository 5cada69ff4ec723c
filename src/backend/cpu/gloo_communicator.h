// GlooCommunicator: the CPU backend's collectives (backend/communicator.h) over Gloo's TCP
// transport (Debian's libgloo-dev), rendezvous through the group's TcpStore. Float32 only
// (the CPU backend computes in float32). Every collective runs with the group's timeout:
// a rank that died or stopped calling makes the others throw DeviceError naming their rank,
// never hang. Built where Gloo is found (SEAM_HAVE_GLOO); elsewhere make_gloo_communicator
// throws a clear error.
#pragma once
#include <memory>

#include "backend/communicator.h"

namespace seam {

// True when this build has Gloo.
bool gloo_compiled();
// Connects rank init.rank of init.size to the others (a full mesh of TCP pairs); returns when
// every rank has connected, throws seam::Error naming the rank after the timeout.
std::unique_ptr<Communicator> make_gloo_communicator(TcpStore& store, const DistInit& init);

}  // namespace seam
