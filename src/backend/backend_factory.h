// Creates the backend for a device. The CUDA backend exists only in builds
// with SEAM_CUDA; asking for it elsewhere is a clear error.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"

namespace seam {

bool cuda_compiled();
// True when the CUDA backend is compiled in and a GPU is visible; `why` says why not.
bool cuda_device_available(std::string* why = nullptr);
std::unique_ptr<Backend> make_backend(Device device, int device_id = 0);

}  // namespace seam
