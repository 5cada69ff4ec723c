#include "backend/cuda/diagnostic_switch.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace seam::cuda {

namespace {

// The variable's integer value; false when it is unset or empty.
bool read_int(const char* name, long& value) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtol(env, &end, 10);
  SEAM_CHECK(*end == '\0' && errno == 0, name, ": expected an integer, got '", env, "'");
  return true;
}

}  // namespace

int env_choice(const char* name, int default_value, std::initializer_list<int> allowed) {
  long v = 0;
  if (!read_int(name, v)) return default_value;
  std::string list;
  for (int a : allowed) {
    if (v == a) return a;
    list += (list.empty() ? "" : ", ") + std::to_string(a);
  }
  throw Error(detail::concat(name, ": expected one of ", list, ", got ", v));
}

int env_int(const char* name, int default_value, int lo, int hi) {
  long v = 0;
  if (!read_int(name, v)) return default_value;
  SEAM_CHECK(v >= lo && v <= hi, name, ": expected an integer in [", lo, ", ", hi, "], got ", v);
  return int(v);
}

int env_name_choice(const char* name, int default_index, std::initializer_list<const char*> names) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return default_index;
  std::string list;
  int i = 0;
  for (const char* n : names) {
    if (std::string(env) == n) return i;
    list += (list.empty() ? "" : ", ") + std::string(n);
    ++i;
  }
  throw Error(detail::concat(name, ": expected one of ", list, ", got '", env, "'"));
}

}  // namespace seam::cuda
