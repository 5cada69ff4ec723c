#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "model/json_file.h"

namespace seam {
namespace {

// The safetensors reference implementation refuses headers above 100 MB; a larger
// length means a corrupt file, not a model.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

// Bytes per element of every safetensors dtype with a whole-byte size; 0 = unknown
// (sub-byte or future types: placement is still checked, size is not).
uint64_t safetensors_dtype_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "BOOL" || d == "U8" || d == "I8" || d.rfind("F8_", 0) == 0) return 1;
  return 0;
}

bool to_dtype(const std::string& d, DType& out) {
  if (d == "F32") out = DType::f32;
  else if (d == "F16") out = DType::f16;
  else if (d == "BF16") out = DType::bf16;
  else if (d == "F8_E4M3") out = DType::fp8_e4m3;  // quantized linear weights (model/fp8_checkpoint.h)
  else return false;
  return true;
}

std::string offsets_str(uint64_t b, uint64_t e) { return detail::concat("[", b, ", ", e, "]"); }

}  // namespace

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->file_name_ = std::filesystem::path(path).filename().string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    throw Error(err == ENOENT ? path + ": file not found" : path + ": cannot open: " + std::strerror(err));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size < 8) {
    ::close(fd);
    throw Error(detail::concat(f->file_name_, ": truncated: ", size,
                               " bytes, shorter than the 8-byte header length"));
  }
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);  // the mapping keeps the file alive
  SEAM_CHECK(p != MAP_FAILED, path, ": mmap failed: ", std::strerror(map_errno));
  f->map_ = p;
  f->map_size_ = size;
  f->parse_header();  // on a throw, ~SafetensorsFile unmaps
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) munmap(map_, map_size_);
}

void SafetensorsFile::parse_header() {
  const auto* bytes = static_cast<const unsigned char*>(map_);
  uint64_t header_len = 0;  // little-endian on disk, whatever the host
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  const uint64_t room = map_size_ - 8;
  SEAM_CHECK(header_len <= room, file_name_, ": header length ", header_len, " goes beyond the end of the file (",
             map_size_, " bytes); the file is truncated or not safetensors");
  SEAM_CHECK(header_len <= kMaxHeaderBytes, file_name_, ": header length ", header_len,
             " is larger than the 100 MB safetensors limit");
  data_ = static_cast<const char*>(map_) + 8 + header_len;
  data_size_ = room - header_len;

  const std::string text(static_cast<const char*>(map_) + 8, header_len);
  const nlohmann::json h = parse_json_text(text, file_name_ + " header");
  SEAM_CHECK(h.is_object(), file_name_, ": header is not a JSON object");
  for (const auto& [name, v] : h.items()) {
    if (name == "__metadata__") continue;
    const std::string what = file_name_ + ": tensor '" + name + "'";
    SEAM_CHECK(v.is_object(), what, ": header entry is not an object");
    auto dt = v.find("dtype");
    auto sh = v.find("shape");
    auto off = v.find("data_offsets");
    SEAM_CHECK(dt != v.end() && dt->is_string(), what, ": header entry has no string 'dtype'");
    SEAM_CHECK(sh != v.end() && sh->is_array(), what, ": header entry has no 'shape' list");
    SEAM_CHECK(off != v.end() && off->is_array() && off->size() == 2 && (*off)[0].is_number_unsigned() &&
                   (*off)[1].is_number_unsigned(),
               what, ": header entry has no 'data_offsets' [begin, end] of non-negative integers");
    Entry e;
    e.dtype = dt->get<std::string>();
    uint64_t numel = 1;
    for (const auto& d : *sh) {
      SEAM_CHECK(d.is_number_unsigned(), what, ": shape ", sh->dump(), " is not a list of non-negative integers");
      uint64_t n = d.get<uint64_t>();
      SEAM_CHECK(n <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(numel, n, &numel), what, ": shape ",
                 sh->dump(), " overflows");
      e.shape.push_back(int64_t(n));
    }
    e.begin = (*off)[0].get<uint64_t>();
    e.end = (*off)[1].get<uint64_t>();
    SEAM_CHECK(e.begin <= e.end, what, ": data_offsets ", offsets_str(e.begin, e.end), " begin after they end");
    SEAM_CHECK(e.end <= data_size_, what, ": data_offsets ", offsets_str(e.begin, e.end),
               " are outside the data section (", data_size_, " bytes); the file is truncated or corrupt");
    uint64_t elem = safetensors_dtype_size(e.dtype);
    uint64_t want = 0;
    if (elem) {
      SEAM_CHECK(!__builtin_mul_overflow(numel, elem, &want) && want == e.end - e.begin, what, ": data_offsets ",
                 offsets_str(e.begin, e.end), " hold ", e.end - e.begin, " bytes, but shape ", sh->dump(), " of ",
                 e.dtype, " needs ", numel * elem);
    }
    entries_.emplace(name, std::move(e));
  }
}

std::vector<std::string> SafetensorsFile::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, e] : entries_) names.push_back(name);
  return names;
}

HostTensor SafetensorsFile::tensor(const std::string& name) const {
  auto it = entries_.find(name);
  SEAM_CHECK(it != entries_.end(), file_name_, ": missing tensor '", name, "'");
  const Entry& e = it->second;
  HostTensor t;
  t.name = name;
  SEAM_CHECK(to_dtype(e.dtype, t.dtype), file_name_, ": tensor '", name, "' has unsupported dtype ", e.dtype,
             " (supported: F32, F16, BF16, F8_E4M3)");
  t.shape = e.shape;
  t.data = data_ + e.begin;
  return t;
}

}  // namespace seam
