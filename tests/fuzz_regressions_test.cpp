// Regressions for what the libFuzzer targets of fuzz/ found (issue 26). Each
// crashing input also sits in fuzz/corpus/<target>/regress_*, so
// scripts/fuzz.sh replays it on every run.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace seam {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "escaped as a non-seam::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// config_json_fuzz: a number past the double range escaped load_model_config
// as nlohmann's out_of_range (the CLI's "internal error").
TEST(FuzzRegressions, ConfigJsonNumberOverflowIsASeamError) {
  const std::string dir = test::make_temp_dir("fuzz_config");
  test::write_file(dir + "/config.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"rope_theta\": 1e400}");
  const std::string msg = error_of([&] { (void)load_model_config(dir); });
  EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'rope_theta' is out of range"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  // The fuzzer's own input: 1e400 before the document.
  test::write_file(dir + "/config.json", test::read_file(std::string(SEAM_SOURCE_DIR) +
                                                         "/fuzz/corpus/config_json_fuzz/regress_c30e1b9d746c"));
  (void)error_of([&] { (void)load_model_config(dir); });
}

// safetensors_header_fuzz: the same through a safetensors header.
TEST(FuzzRegressions, SafetensorsHeaderNumberOverflowIsASeamError) {
  const std::string dir = test::make_temp_dir("fuzz_st");
  const std::string header = "{\"w\": {\"dtype\": \"F32\", \"shape\": [1e400], \"data_offsets\": [0, 4]}}";
  std::string file(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char((n >> (8 * i)) & 0xff);
  file += header + std::string(4, '\0');
  test::write_file(dir + "/model.safetensors", file);
  const std::string msg = error_of([&] { (void)SafetensorsFile::open(dir + "/model.safetensors"); });
  EXPECT_NE(msg.find("'w.shape[0]' is out of range"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  test::write_file(
      dir + "/model.safetensors",
      test::read_file(std::string(SEAM_SOURCE_DIR) + "/fuzz/corpus/safetensors_header_fuzz/regress_2c8dedb89362"));
  (void)error_of([&] { (void)SafetensorsFile::open(dir + "/model.safetensors"); });
}

}  // namespace
}  // namespace seam
