// The safetensors header parser: any file bytes either open (and then every
// listed tensor reads as a view inside the mapping) or throw seam::Error.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace seam;
  const std::string path = fuzz::scratch_dir() + "/model.safetensors";
  fuzz::write_file(path, std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    auto file = SafetensorsFile::open(path);
    for (const std::string& name : file->tensor_names()) {
      try {
        const HostTensor t = file->tensor(name);
        (void)t;
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  } catch (const std::exception& e) {
    fuzz::finding("safetensors threw a non-seam::Error", e.what());
  }
  return 0;
}
