// Outputs written atomically: two writers alive at once never take the same file.
#include "ridgeline/core/files.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "ridgeline/core/error.hpp"

namespace ridgeline {
namespace {

std::string message_of(const std::string& path, const char* flag) {
  try {
    AtomicFile f(path, flag);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(AtomicFile, TwoWritersOfOneFileByAnySpellingAreRefused) {
  const std::string dir = ::testing::TempDir() + "/atomic_file_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/out.csv";
  std::filesystem::remove(path);
  {
    AtomicFile first(path, "--a");
    // The same name, another spelling of it, the same file through its folder's "..":
    // each names the writer it would collide with.
    EXPECT_NE(message_of(path, "--b").find("--b: " + path + " is also written by --a"), std::string::npos);
    EXPECT_NE(message_of(dir + "/./out.csv", "--b").find("is also written by --a"), std::string::npos);
    EXPECT_NE(message_of(dir + "/../atomic_file_test/out.csv", "--b").find("is also written by --a"), std::string::npos);
    EXPECT_EQ(message_of(dir + "/other.csv", "--b"), "");  // another file: no collision
    std::fputs("a\n", first.stream());
    first.commit();
  }
  EXPECT_TRUE(std::filesystem::exists(path));
  // Its writer gone, the file can be written again; a hard link to it is the same file.
  const std::string link = dir + "/link.csv";
  std::filesystem::remove(link);
  ASSERT_EQ(::link(path.c_str(), link.c_str()), 0);
  {
    AtomicFile again(path, "--a");
    EXPECT_NE(message_of(link, "--b").find("is also written by --a"), std::string::npos);
  }
  EXPECT_EQ(message_of(link, "--b"), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ridgeline
