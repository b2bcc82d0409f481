#pragma once
/// The files a run reads and the files it writes: an output never replaces an input.
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ridgeline {

/// Records that this run read `path` (by device and inode; a path that cannot be stat'ed is
/// not recorded). Thread-safe.
void note_input(const std::string& path) noexcept;

/// Throws InputError naming `flag` when `path` cannot take an output: it is a file this run
/// read (the same inode, whatever the spelling), a directory, or in a directory that does not
/// exist. Called before any work whose result would go there, and again when writing.
void check_output_path(const std::string& path, std::string_view flag);

/// A file written whole or not at all (docs/serving.md#output-files): the bytes go to a temporary
/// in `path`'s folder with an unpredictable name, created exclusively without following links
/// (O_CREAT | O_EXCL | O_NOFOLLOW: an existing file or link of that name is never opened), and
/// commit() renames it over `path`; the temporary is removed when the writer ends uncommitted.
/// `path` is checked with check_output_path on creation and again before the rename (an input
/// read since is refused then); a second writer alive at the same time is refused the same file
/// by any spelling (two output flags of one command naming it).
class AtomicFile {
 public:
  /// InputError naming `flag` when `path` cannot take the output or no temporary can be made.
  AtomicFile(std::string path, std::string_view flag);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// The temporary, open for writing (binary); null once committed.
  std::FILE* stream() noexcept { return f_; }
  /// The temporary's path (for a tool that writes it by name).
  const std::string& temporary() const noexcept { return tmp_; }
  /// Flushes, closes and renames the temporary over the path; InputError naming the flag when
  /// writing failed (the old file, if any, is left as it was).
  void commit();

 private:
  std::string path_, flag_, tmp_;
  std::FILE* f_ = nullptr;
  bool registered_ = false;  // among the outputs being written (until destroyed)
};

/// Throws InputError naming `flag` unless `path` ends with one of `extensions` (without regard
/// to case): the format written follows the name, never silently another.
void check_extension(const std::string& path, std::string_view flag, std::initializer_list<std::string_view> extensions);

}  // namespace ridgeline
