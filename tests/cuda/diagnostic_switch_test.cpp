// The CUDA backend's diagnostic switches (diagnostic_switch.h): defaults when unset, the
// allowed values, and a clear error naming the variable for anything else. Runs without a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "backend/cuda/diagnostic_switch.h"
#include "core/error.h"

namespace seam {
namespace {

constexpr const char* kVar = "SEAM_TEST_DIAGNOSTIC_SWITCH";

// Sets kVar for one scope (nullptr: unset).
struct EnvVar {
  explicit EnvVar(const char* value) {
    if (value == nullptr) {
      unsetenv(kVar);
    } else {
      setenv(kVar, value, 1);
    }
  }
  ~EnvVar() { unsetenv(kVar); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DiagnosticSwitch, ChoiceTakesTheDefaultOrAnAllowedValue) {
  {
    EnvVar e(nullptr);
    EXPECT_EQ(cuda::env_choice(kVar, 4, {1, 2, 4, 8}), 4);
  }
  {
    EnvVar e("");
    EXPECT_EQ(cuda::env_choice(kVar, 4, {1, 2, 4, 8}), 4);
  }
  {
    EnvVar e("2");
    EXPECT_EQ(cuda::env_choice(kVar, 4, {1, 2, 4, 8}), 2);
  }
  {
    EnvVar e("0");
    EXPECT_EQ(cuda::env_choice(kVar, 1, {0, 1}), 0);
  }
}

TEST(DiagnosticSwitch, ChoiceRejectsOtherValuesNamingTheVariable) {
  for (const char* bad : {"3", "x", "2x", "-1", "99999999999999999999"}) {
    EnvVar e(bad);
    const std::string msg = error_of([] { cuda::env_choice(kVar, 4, {1, 2, 4, 8}); });
    EXPECT_NE(msg.find(kVar), std::string::npos) << "value '" << bad << "': " << msg;
  }
  EnvVar e("3");
  EXPECT_NE(error_of([] { cuda::env_choice(kVar, 4, {1, 2, 4, 8}); }).find("1, 2, 4, 8"), std::string::npos);
}

TEST(DiagnosticSwitch, IntegerTakesTheDefaultOrAValueInRange) {
  {
    EnvVar e(nullptr);
    EXPECT_EQ(cuda::env_int(kVar, 64, 16, 1 << 20), 64);
  }
  {
    EnvVar e("16");
    EXPECT_EQ(cuda::env_int(kVar, 64, 16, 1 << 20), 16);
  }
  {
    EnvVar e("1048576");
    EXPECT_EQ(cuda::env_int(kVar, 64, 16, 1 << 20), 1 << 20);
  }
  for (const char* bad : {"15", "1048577", "abc", "64k"}) {
    EnvVar e(bad);
    EXPECT_NE(error_of([] { cuda::env_int(kVar, 64, 16, 1 << 20); }).find(kVar), std::string::npos) << bad;
  }
}

TEST(DiagnosticSwitch, NameChoiceTakesTheDefaultOrANamedValue) {
  {
    EnvVar e(nullptr);
    EXPECT_EQ(cuda::env_name_choice(kVar, 0, {"wgmma", "cublaslt"}), 0);
  }
  {
    EnvVar e("");
    EXPECT_EQ(cuda::env_name_choice(kVar, 1, {"wgmma", "cublaslt"}), 1);
  }
  {
    EnvVar e("cublaslt");
    EXPECT_EQ(cuda::env_name_choice(kVar, 0, {"wgmma", "cublaslt"}), 1);
  }
  {
    EnvVar e("wgmma");
    EXPECT_EQ(cuda::env_name_choice(kVar, 1, {"wgmma", "cublaslt"}), 0);
  }
  for (const char* bad : {"1", "cuBLASLt", "wgmma ", "tensorcores"}) {
    EnvVar e(bad);
    const std::string msg = error_of([] { cuda::env_name_choice(kVar, 0, {"wgmma", "cublaslt"}); });
    EXPECT_NE(msg.find(kVar), std::string::npos) << "value '" << bad << "': " << msg;
    EXPECT_NE(msg.find("wgmma, cublaslt"), std::string::npos) << msg;
    EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace seam
