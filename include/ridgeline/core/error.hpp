#pragma once
/// Errors: one type for bad input. The library never exits and never prints.
#include <stdexcept>
#include <string>

namespace ridgeline {

/// Bad input (a file, key, flag or value): the message names where, what and why,
/// on one line. The CLI maps it to exit status 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ridgeline
