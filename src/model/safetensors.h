// SafetensorsFile: one *.safetensors file, memory-mapped read-only, its header
// parsed and every entry's placement validated at open.
//
// Layout: [u64 little-endian header length N][N bytes of JSON header][data].
// The header maps tensor name -> {dtype, shape, data_offsets [begin, end)}, offsets
// relative to the start of the data section; "__metadata__" is ignored.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace seam {

class SafetensorsFile {
 public:
  // Maps `path` and validates the header: length inside the file, every entry's
  // offsets inside the data section and its byte size matching its shape and dtype
  // (for dtypes seam knows the size of). Throws seam::Error naming the file.
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& file_name() const { return file_name_; }  // basename, for messages
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  std::vector<std::string> tensor_names() const;
  // The tensor as a view into the mapping; throws if it is missing or its dtype is
  // not F32/F16/BF16: "<file>: tensor 'x' has unsupported dtype I8".
  HostTensor tensor(const std::string& name) const;

 private:
  struct Entry {
    std::string dtype;  // the safetensors spelling: "F32", "BF16", "I8", ...
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // byte offsets into the data section
  };
  SafetensorsFile() = default;
  void parse_header();

  std::string file_name_;
  void* map_ = nullptr;  // the whole file, PROT_READ
  size_t map_size_ = 0;
  const char* data_ = nullptr;  // start of the data section (map_ + 8 + header length)
  uint64_t data_size_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace seam
