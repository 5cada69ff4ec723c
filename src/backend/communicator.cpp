#include "backend/communicator.h"

#include <cstring>

#include "core/error.h"

namespace seam {

std::string Communicator::next_key(const char* what) {
  return init_.prefix + "/" + what + "/" + std::to_string(n_host_calls_++);
}

void Communicator::broadcast_bytes(void* data, size_t n_bytes, int root) {
  const std::string key = next_key("broadcast");
  try {
    if (rank() == root) {
      store_.set(key, std::string(static_cast<const char*>(data), n_bytes));
      return;
    }
    const std::string v = store_.get(key);
    SEAM_CHECK(v.size() == n_bytes, "broadcast of ", n_bytes, " bytes received ", v.size());
    std::memcpy(data, v.data(), n_bytes);
  } catch (const Error& e) {
    throw Error(label() + ": " + e.what());
  }
}

std::vector<std::string> Communicator::all_gather_bytes(const std::string& mine) {
  const std::string key = next_key("all_gather");
  std::vector<std::string> all(static_cast<size_t>(size()));
  try {
    store_.set(key + "/" + std::to_string(rank()), mine);
    for (int r = 0; r < size(); ++r) all[size_t(r)] = r == rank() ? mine : store_.get(key + "/" + std::to_string(r));
  } catch (const Error& e) {
    throw Error(label() + ": " + e.what());
  }
  return all;
}

}  // namespace seam
