// GemmTuningCache: results survive a save and a reload, stay within their scope, and a
// missing, malformed or unwritable file never stops start-up (it is an empty cache, replaced
// at save, or a reported failure to save).
#include "backend/gemm_tuning_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace seam::test {
namespace {

namespace fs = std::filesystem;

class GemmTuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("seam_tuning_cache_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "sub/dir/tune.json") const { return (dir_ / name).string(); }
  void write(const std::string& p, const std::string& text) const {
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
  }
  static GemmTuningCache::Entry entry(uint64_t seed, double us) {
    GemmTuningCache::Entry e;
    for (size_t i = 0; i < e.algo.size(); ++i) e.algo[i] = seed * 0x9e3779b97f4a7c15ull + i;  // all 64 bits used
    e.algo[7] = ~uint64_t(0);
    e.us = us;
    return e;
  }
  fs::path dir_;
};

TEST_F(GemmTuningCacheTest, MissingFileIsAnEmptyCacheAndSaveCreatesItsFolder) {
  GemmTuningCache c(path(), "gpu A");
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.find("1,2,3"), nullptr);
  EXPECT_FALSE(c.dirty());
  EXPECT_TRUE(c.save());  // nothing to write
  EXPECT_FALSE(fs::exists(path()));
  c.put("1,2,3", entry(1, 12.5));
  EXPECT_TRUE(c.dirty());
  EXPECT_TRUE(c.save());
  EXPECT_TRUE(fs::exists(path()));
  EXPECT_FALSE(c.dirty());
}

TEST_F(GemmTuningCacheTest, EntriesSurviveAReloadBitForBit) {
  {
    GemmTuningCache c(path(), "gpu A");
    c.put("4096,576,4096", entry(7, 28.25));
    c.put("28672,448,4096", entry(9, 161.0));
    ASSERT_TRUE(c.save());
  }
  GemmTuningCache c(path(), "gpu A");
  EXPECT_EQ(c.size(), 2u);
  const auto* e = c.find("4096,576,4096");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->algo, entry(7, 0).algo);
  EXPECT_DOUBLE_EQ(e->us, 28.25);
  ASSERT_NE(c.find("28672,448,4096"), nullptr);
  EXPECT_EQ(c.find("28672,448,4096")->algo, entry(9, 0).algo);
  EXPECT_EQ(c.find("4096,577,4096"), nullptr);
}

TEST_F(GemmTuningCacheTest, ScopesAreSeparateAndAllSurviveAnotherScopesSave) {
  {
    GemmTuningCache a(path(), "gpu A");
    a.put("k", entry(1, 1.0));
    ASSERT_TRUE(a.save());
  }
  {
    GemmTuningCache b(path(), "gpu B");
    EXPECT_EQ(b.find("k"), nullptr);  // another GPU / library / settings: not returned
    EXPECT_EQ(b.size(), 0u);
    b.put("k", entry(2, 2.0));
    ASSERT_TRUE(b.save());
  }
  GemmTuningCache a(path(), "gpu A"), b(path(), "gpu B");
  ASSERT_NE(a.find("k"), nullptr);
  ASSERT_NE(b.find("k"), nullptr);
  EXPECT_EQ(a.find("k")->algo, entry(1, 0).algo);
  EXPECT_EQ(b.find("k")->algo, entry(2, 0).algo);
}

TEST_F(GemmTuningCacheTest, MalformedFilesAreEmptyAndReplacedAtSave) {
  const std::string bad[] = {
      "not json at all",
      "[1, 2]",
      R"({"format": 99, "scopes": {}})",
      R"({"format": 1})",
      R"({"format": 1, "scopes": {"gpu A": {"k": {"algo": "abc", "us": 1}}}})",  // short hex
      R"({"format": 1, "scopes": {"gpu A": {"k": {"algo": ")" + std::string(128, 'g') + R"(", "us": 1}}}})",  // not hex
      R"({"format": 1, "scopes": {"gpu A": {"k": {"algo": ")" + std::string(128, '0') + R"("}}}})",           // no us
      R"({"format": 1, "scopes": {"gpu A": 5}})",
  };
  for (const std::string& text : bad) {
    SCOPED_TRACE(text);
    write(path(), text);
    GemmTuningCache c(path(), "gpu A");
    EXPECT_EQ(c.size(), 0u);
    EXPECT_EQ(c.find("k"), nullptr);
    EXPECT_TRUE(c.dirty());  // the bad file is replaced by the next save
    c.put("k", entry(3, 3.0));
    ASSERT_TRUE(c.save());
    GemmTuningCache again(path(), "gpu A");
    ASSERT_NE(again.find("k"), nullptr);
    EXPECT_EQ(again.find("k")->algo, entry(3, 0).algo);
  }
}

TEST_F(GemmTuningCacheTest, AnUnwritablePathIsReportedNotThrown) {
  write(path("a_file"), "x");  // a regular file where the cache's folder would be
  GemmTuningCache c(path("a_file/tune.json"), "gpu A");
  c.put("k", entry(1, 1.0));
  EXPECT_FALSE(c.save());
  EXPECT_TRUE(c.dirty());
  EXPECT_TRUE(fs::is_regular_file(path("a_file")));
}

TEST_F(GemmTuningCacheTest, DefaultPathFollowsSeamThenXdgThenHome) {
  auto get = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v ? v : "\x01";  // \x01: was unset
  };
  const std::string seam = get("SEAM_CACHE_DIR"), xdg = get("XDG_CACHE_HOME"), home = get("HOME");
  auto restore = [](const char* n, const std::string& v) {
    if (v == "\x01")
      ::unsetenv(n);
    else
      ::setenv(n, v.c_str(), 1);
  };
  ::setenv("SEAM_CACHE_DIR", "/s", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(GemmTuningCache::default_path(), "/s/gemm_autotune.json");
  ::unsetenv("SEAM_CACHE_DIR");
  EXPECT_EQ(GemmTuningCache::default_path(), "/x/seam/gemm_autotune.json");
  ::setenv("XDG_CACHE_HOME", "", 1);
  EXPECT_EQ(GemmTuningCache::default_path(), "/h/.cache/seam/gemm_autotune.json");
  ::unsetenv("HOME");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(GemmTuningCache::default_path(), "");
  restore("SEAM_CACHE_DIR", seam);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

}  // namespace
}  // namespace seam::test
