// --quantization fp8's load-time weight quantization on the device (CudaBackend::
// quantize_fp8_per_channel, the per-token activation quantizer's kernel over weight rows)
// against core/fp8.h's definition, bit for bit: dummy (random) parts filled on the device, a row
// view of one, bf16 / f16 / f32 mapped parts with a zero row, an outlier and E4M3 ties; staged
// whole and in chunks; through Linear::load_fp8; and a part of more rows than one launch's grid
// takes (65,535), so the op's row split is covered.
#include "cuda_test_util.h"
#include "fp8_online_quantize_cases.h"

namespace seam::test {
namespace {

class CudaFp8OnlineQuantize : public CudaTest {};

TEST_F(CudaFp8OnlineQuantize, PartsEqualTheDefinition) {
  std::mt19937 rng(7);
  const Fp8OnlineParts p = fp8_online_parts(200, rng);
  check_quantize_parts(*gpu, p, int64_t(1) << 24, "cuda, whole parts");
  check_quantize_parts(*gpu, p, 3 * 200 + 17, "cuda, 3-row chunks");
  const Fp8OnlineParts wide = fp8_online_parts(4096, rng);  // the 8B models' hidden size
  check_quantize_parts(*gpu, wide, int64_t(1) << 24, "cuda, 4096 columns");
}

TEST_F(CudaFp8OnlineQuantize, LinearLoadEqualsTheDefinition) {
  std::mt19937 rng(8);
  check_linear_load(*gpu, fp8_online_parts(96, rng), "cuda Linear::load_fp8");
}

TEST_F(CudaFp8OnlineQuantize, MoreRowsThanOneGrid) {
  Fp8OnlineParts p;
  p.n_in = 16;
  p.add_random(70000, 21);
  check_quantize_parts(*gpu, p, int64_t(1) << 24, "cuda, 70,000 rows");
}

}  // namespace
}  // namespace seam::test
