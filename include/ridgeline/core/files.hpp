#pragma once
/// The files a run reads and the files it writes: an output never replaces an input.
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

/// Throws InputError naming `flag` unless `path` ends with one of `extensions` (without regard
/// to case): the format written follows the name, never silently another.
void check_extension(const std::string& path, std::string_view flag, std::initializer_list<std::string_view> extensions);

}  // namespace ridgeline
