#include "backend/cuda/map_rows_inplace.cuh"
#include "backend/cuda/scale.h"

namespace seam::cuda {

namespace {

struct ScaleOp {
  float s;
  __device__ float operator()(float v) const { return v * s; }
};

}  // namespace

void launch_scale(const Tensor& x, float s, cudaStream_t stream) {
  SEAM_DISPATCH_FLOAT_TYPES(x.dtype, T, "scale", [&] { map_rows_inplace<T>(x, ScaleOp{s}, stream); });
}

}  // namespace seam::cuda
