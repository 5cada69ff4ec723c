// The CUDA backend's public entry points. Plain C++: no CUDA type appears here,
// so backend_factory.cpp and tests include it without the CUDA toolkit headers.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"

namespace seam {

// True when the CUDA runtime sees at least one GPU; otherwise `why` says why not
// (no driver, no device, ...).
bool cuda_device_present(std::string* why);

// A CudaBackend on GPU `device_id`: one non-blocking compute stream, a cuBLASLt
// handle with a static 32 MiB workspace, and the split-KV attention scratch,
// all allocated here, once.
std::unique_ptr<Backend> make_cuda_backend(int device_id);

// The compute stream of a CUDA backend as an opaque handle (a cudaStream_t), for
// callers that time or order their own work with it (the kernel benchmark).
void* cuda_backend_stream(Backend& backend);

}  // namespace seam
