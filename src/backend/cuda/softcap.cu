#include "backend/cuda/map_rows_inplace.cuh"
#include "backend/cuda/softcap.h"

namespace seam::cuda {

namespace {

// tanhf (not the approximate SFU tanh): the capped logits feed sampling and logprobs,
// which the CPU reference checks to float32 rounding.
struct SoftcapOp {
  float cap;
  float inv;  // 1 / cap
  __device__ float operator()(float v) const { return cap * tanhf(v * inv); }
};

}  // namespace

// x is float32 (op_checks::softcap).
void launch_softcap(const Tensor& x, float cap, cudaStream_t stream) {
  map_rows_inplace<float>(x, SoftcapOp{cap, 1.f / cap}, stream);
}

}  // namespace seam::cuda
