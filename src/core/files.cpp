// Inputs by inode, and outputs checked against them.
#include "ridgeline/core/files.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "ridgeline/core/error.hpp"

namespace ridgeline {

namespace {

struct Inputs {
  std::mutex mutex;
  std::vector<std::pair<std::pair<dev_t, ino_t>, std::string>> files;  // (device, inode), the path as given
};

Inputs& inputs() {
  static Inputs in;
  return in;
}

}  // namespace

void note_input(const std::string& path) noexcept {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  try {
    Inputs& in = inputs();
    std::lock_guard<std::mutex> lock(in.mutex);
    for (const auto& f : in.files) {
      if (f.first == std::pair{st.st_dev, st.st_ino}) return;
    }
    if (in.files.size() < 4096) in.files.push_back({{st.st_dev, st.st_ino}, path});
  } catch (...) {
    // Out of memory while recording: the run goes on without this guard for the file.
  }
}

void check_output_path(const std::string& path, std::string_view flag) {
  if (path.empty()) throw InputError(fmt::format("{}: an empty path", flag));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: {} is a directory: expected a file name", flag, path));
    Inputs& in = inputs();
    std::lock_guard<std::mutex> lock(in.mutex);
    for (const auto& f : in.files) {
      if (f.first == std::pair{st.st_dev, st.st_ino}) {
        throw InputError(fmt::format("{}: {} is also an input of this command ({}): refusing to overwrite it", flag, path, f.second));
      }
    }
    return;
  }
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    throw InputError(fmt::format("{}: {}: the directory {} does not exist", flag, path, parent.string()));
  }
}

void check_extension(const std::string& path, std::string_view flag, std::initializer_list<std::string_view> extensions) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string list;
  for (const std::string_view e : extensions) {
    if (lower.size() > e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0) return;
    list += list.empty() ? std::string(e) : " or " + std::string(e);
  }
  throw InputError(fmt::format("{}: '{}' needs the extension {}: the format follows the name", flag, path, list));
}

}  // namespace ridgeline
