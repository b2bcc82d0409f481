// Inputs by inode, outputs checked against them, and outputs written atomically.
#include "ridgeline/core/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <utility>
#include <vector>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/text.hpp"

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

// The outputs being written now (AtomicFiles alive): two writers of one run never take the
// same file, whatever the spellings.
struct Output {
  std::string key;                    // absolute, weakly canonical path
  std::pair<dev_t, ino_t> id{0, 0};   // the existing file's, else zeros
  std::string flag, path;             // as given
};
struct Outputs {
  std::mutex mutex;
  std::vector<Output> files;
};

Outputs& outputs() {
  static Outputs out;
  return out;
}

Output output_of(const std::string& path, std::string_view flag) {
  Output o{path, {0, 0}, std::string(flag), path};
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (!ec) o.key = full.string();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) o.id = {st.st_dev, st.st_ino};
  return o;
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

namespace {

// 16 lowercase letters and digits from the system's random source (getentropy: the kernel's
// on Linux, the browser's crypto in WebAssembly), never guessable from the path, the time or
// the process id.
std::string random_suffix() {
  unsigned char bytes[16] = {};
  if (::getentropy(bytes, sizeof(bytes)) != 0) throw InputError("cannot draw a random name for a temporary file (getentropy failed)");
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (const unsigned char b : bytes) out += kAlphabet[b % 36];
  return out;
}

}  // namespace

AtomicFile::AtomicFile(std::string path, std::string_view flag) : path_(std::move(path)), flag_(flag) {
  check_output_path(path_, flag_);
  {
    Output o = output_of(path_, flag_);
    Outputs& out = outputs();
    std::lock_guard<std::mutex> lock(out.mutex);
    for (const Output& other : out.files) {
      if (other.key == o.key || (o.id != std::pair<dev_t, ino_t>{0, 0} && other.id == o.id)) {
        throw InputError(fmt::format("{}: {} is also written by {} ({}): give each its own", flag_, path_, other.flag, other.path));
      }
    }
    out.files.push_back(std::move(o));
    registered_ = true;
  }
  const std::filesystem::path p(path_);
  const std::string dir = p.parent_path().string(), base = p.filename().string();
  // In the target's folder (the rename stays on one file system), hidden, never an existing
  // name: O_EXCL fails on any file or link already there, so nothing is followed or truncated.
  for (int attempt = 0; attempt < 64 && f_ == nullptr; ++attempt) {
    tmp_ = (dir.empty() ? std::string() : dir + "/") + "." + base + "." + random_suffix() + ".tmp";
    const int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
      if (errno == EEXIST) continue;
      throw InputError(fmt::format("{}: {}: cannot write a temporary file beside it: {}", flag_, path_, std::strerror(errno)));
    }
    f_ = ::fdopen(fd, "wb");
    if (f_ == nullptr) {
      ::close(fd);
      ::unlink(tmp_.c_str());
      throw InputError(fmt::format("{}: {}: cannot write here", flag_, path_));
    }
  }
  if (f_ == nullptr) throw InputError(fmt::format("{}: {}: no free name for a temporary file beside it", flag_, path_));
}

AtomicFile::~AtomicFile() {
  if (registered_) {
    Outputs& out = outputs();
    std::lock_guard<std::mutex> lock(out.mutex);
    for (auto it = out.files.begin(); it != out.files.end(); ++it) {
      if (it->flag == flag_ && it->path == path_) {
        out.files.erase(it);
        break;
      }
    }
  }
  if (f_ == nullptr) return;
  std::fclose(f_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::commit() {
  if (f_ == nullptr) return;
  const bool ok = std::fflush(f_) == 0 && std::ferror(f_) == 0;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!ok || !closed) {
    ::unlink(tmp_.c_str());
    throw InputError(fmt::format("{}: {}: writing failed", flag_, path_));
  }
  try {
    check_output_path(path_, flag_);  // an input opened since the writer was made (a trace read as the run went)
  } catch (...) {
    ::unlink(tmp_.c_str());
    throw;
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    throw InputError(fmt::format("{}: {}: cannot replace the file: {}", flag_, path_, std::strerror(e)));
  }
}

void check_extension(const std::string& path, std::string_view flag, std::initializer_list<std::string_view> extensions) {
  const std::string lower = ascii_lower(path);
  std::string list;
  for (const std::string_view e : extensions) {
    if (lower.size() > e.size() && lower.compare(lower.size() - e.size(), e.size(), e) == 0) return;
    list += list.empty() ? std::string(e) : " or " + std::string(e);
  }
  throw InputError(fmt::format("{}: '{}' needs the extension {}: the format follows the name", flag, path, list));
}

}  // namespace ridgeline
