// config.json loading: any bytes either give a model config or throw
// seam::Error naming the file and field.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seam;
  fuzz::write_file(fuzz::scratch_dir() + "/config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const ModelConfig c = load_model_config(fuzz::scratch_dir());
    (void)rope_inv_freq(c);
  } catch (const Error&) {
  } catch (const std::exception& e) {
    fuzz::finding("load_model_config threw a non-seam::Error", e.what());
  }
  return 0;
}
