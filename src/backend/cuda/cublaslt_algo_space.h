// The algorithm configurations cuBLASLt will run for one matmul, beyond the few its
// heuristic offers. cublasLtMatmulAlgoGetHeuristic returns at most ~8 configurations for
// seam's linears however many are asked for (docs/performance.md, seventh pass); the
// library has far more: every algorithm id x tile x stages x cluster shape x swizzle x
// custom option it supports. This walks that product for one plan's descriptors and
// keeps the configurations cublasLtMatmulAlgoCheck accepts within the workspace.
//
// Host-only (no device work, no allocation on the device): legal at start-up and in tools.
#pragma once
#include <cublasLt.h>

#include <cstddef>
#include <vector>

namespace seam::cuda {

struct AlgoSpaceLimits {
  int max_configs = 8192;    // stop after this many accepted configurations
  bool split_k = false;      // also try split-K 2, 3, 4 (compute-bound shapes gain nothing from it)
  int max_custom = 3;        // custom options 0..min(this, the algorithm's maximum)
  size_t max_workspace = 0;  // bytes
  // Narrowing (start-up tuning walks only the tiles of the heuristic's pick): one algorithm id
  // and one stages id (-1: all); plain_options: no CTA swizzling, custom option 0 and the three
  // fixed cluster shapes (cublasLtMatmulAlgoCheck accepted no configuration with the AUTO
  // cluster shape for seam's bf16 GEMMs on the H200: eighth pass, call 6).
  int algo_id = -1;
  int stages_id = -1;
  bool plain_options = false;
};

// A configuration cublasLtMatmulAlgoCheck accepted, with what the check reports.
struct AlgoConfigResult {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;
  float waves = 0;  // cuBLASLt's wave count: 1.0 fills the GPU once
};

// The configurations for this matmul (its descriptor and layouts; A, B of ab_type, C = D of
// c_type, fp32 compute and scale). `n_tried` (optional) receives how many were checked.
std::vector<AlgoConfigResult> enumerate_algo_space(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                   cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                   cublasLtMatrixLayout_t c, cudaDataType_t ab_type,
                                                   cudaDataType_t c_type, const AlgoSpaceLimits& limits,
                                                   long* n_tried = nullptr);

// One configuration's attributes (cublasLt.h's enums: a tile id's rows run along the output
// features and its columns along the tokens in seam's plans, cublaslt_gemm.cpp).
struct AlgoConfig {
  int id = -1, tile = -1, stages = -1, splitk = -1, reduction = -1, swizzle = -1, custom = -1, cluster = -1;
};
AlgoConfig algo_config_of(const cublasLtMatmulAlgo_t& algo);

}  // namespace seam::cuda
