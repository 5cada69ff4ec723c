#include "backend/cuda/cublaslt_algo_space.h"

#include <algorithm>
#include <cstdint>

namespace seam::cuda {

namespace {

// An algorithm's list-valued capability (tile ids, stages ids); {fallback} when it has none.
std::vector<uint32_t> cap_list(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr,
                               uint32_t fallback) {
  size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0)
    return {fallback};
  std::vector<uint32_t> v(bytes / sizeof(uint32_t));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), v.size() * sizeof(uint32_t), &bytes) !=
          CUBLAS_STATUS_SUCCESS ||
      v.empty())
    return {fallback};
  return v;
}

int32_t cap_int(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  int32_t v = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return 0;
  return v;
}

template <typename T>
bool set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

template <typename T>
int get_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T v{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return -1;
  return int(v);
}

}  // namespace

std::vector<AlgoConfigResult> enumerate_algo_space(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                   cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                   cublasLtMatrixLayout_t c, cudaDataType_t ab_type,
                                                   cudaDataType_t c_type, const AlgoSpaceLimits& limits,
                                                   long* n_tried) {
  std::vector<AlgoConfigResult> out;
  long tried = 0;
  int ids[512];
  int n_ids = 0;
  if (cublasLtMatmulAlgoGetIds(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, ab_type, ab_type, c_type, c_type, 512, ids,
                               &n_ids) != CUBLAS_STATUS_SUCCESS)
    n_ids = 0;
  // Cluster shapes: the library's choice and the three small ones its sm90 kernels use.
  const uint16_t clusters[] = {CUBLASLT_CLUSTER_SHAPE_AUTO, CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1,
                               CUBLASLT_CLUSTER_SHAPE_1x2x1};
  std::vector<int32_t> splits = {1};
  if (limits.split_k) splits.insert(splits.end(), {2, 3, 4});
  for (int i = 0; i < n_ids && int(out.size()) < limits.max_configs; ++i) {
    if (limits.algo_id >= 0 && ids[i] != limits.algo_id) continue;
    cublasLtMatmulAlgo_t base{};
    if (cublasLtMatmulAlgoInit(handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, ab_type, ab_type, c_type, c_type, ids[i],
                               &base) != CUBLAS_STATUS_SUCCESS)
      continue;
    const auto tiles = cap_list(base, CUBLASLT_ALGO_CAP_TILE_IDS, CUBLASLT_MATMUL_TILE_UNDEFINED);
    auto stages = cap_list(base, CUBLASLT_ALGO_CAP_STAGES_IDS, CUBLASLT_MATMUL_STAGES_UNDEFINED);
    if (limits.stages_id >= 0) stages = {uint32_t(limits.stages_id)};
    const int max_swizzle =
        !limits.plain_options && cap_int(base, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) != 0 ? 1 : 0;
    const int max_custom =
        limits.plain_options ? 0 : std::min(limits.max_custom, int(cap_int(base, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX)));
    const size_t first_cluster = limits.plain_options ? 1 : 0;  // plain: not AUTO
    const bool has_split_k = cap_int(base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
    for (uint32_t tile : tiles)
      for (uint32_t stage : stages)
        for (size_t ci = first_cluster; ci < sizeof(clusters) / sizeof(clusters[0]); ++ci)
          for (int swizzle = 0; swizzle <= max_swizzle; ++swizzle)
            for (int custom = 0; custom <= max_custom; ++custom)
              for (int32_t split : splits) {
                if (split > 1 && !has_split_k) continue;
                if (int(out.size()) >= limits.max_configs) break;
                const uint16_t cluster = clusters[ci];
                cublasLtMatmulAlgo_t algo = base;
                // An attribute the algorithm does not have is left at its default: the check decides.
                set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, tile);
                set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, stage);
                set_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster);
                set_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, uint32_t(swizzle));
                set_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, uint32_t(custom));
                set_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, split);
                if (split > 1)
                  set_config(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                             uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
                ++tried;
                cublasLtMatmulHeuristicResult_t r{};
                if (cublasLtMatmulAlgoCheck(handle, desc, a, b, c, c, &algo, &r) != CUBLAS_STATUS_SUCCESS) continue;
                if (r.workspaceSize > limits.max_workspace) continue;
                out.push_back(AlgoConfigResult{algo, r.workspaceSize, r.wavesCount});
              }
  }
  if (n_tried) *n_tried = tried;
  return out;
}

AlgoConfig algo_config_of(const cublasLtMatmulAlgo_t& algo) {
  AlgoConfig c;
  c.id = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  c.tile = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  c.stages = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  c.splitk = get_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  c.reduction = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  c.swizzle = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  c.custom = get_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  c.cluster = get_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  return c;
}

}  // namespace seam::cuda
