// Diagnostic switches: environment variables that override a measured default of the CUDA
// backend, for A/B measurements (README lists them). Unset or empty means the default; any
// other value must be one the switch allows, or seam::Error names the variable and the value.
// Callers read each switch once (a function-local static).
#pragma once
#include <initializer_list>

namespace seam::cuda {

// One of `allowed` (decimal), or default_value.
int env_choice(const char* name, int default_value, std::initializer_list<int> allowed);

// An integer in [lo, hi], or default_value.
int env_int(const char* name, int default_value, int lo, int hi);

// The index in `names` of the variable's value (exact, case-sensitive), or default_index.
int env_name_choice(const char* name, int default_index, std::initializer_list<const char*> names);

}  // namespace seam::cuda
