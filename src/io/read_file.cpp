#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ridgeline/core/error.hpp"
#include "ridgeline/core/files.hpp"
#include "ridgeline/io/embedded.hpp"

namespace ridgeline::io {

std::string read_text_file(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw InputError(fmt::format("{}: not a regular file: expected {}", path, what));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open: expected {}", path, what));
  note_input(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ridgeline::io
