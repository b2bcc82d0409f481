// The memory a process may use: physical memory and its resource limits.
#include "ridgeline/core/memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace ridgeline {

double memory_limit_bytes() noexcept {
  double limit = 0;
  auto take = [&](double v) {
    if (v > 0) limit = limit > 0 ? std::min(limit, v) : v;
  };
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) take(static_cast<double>(pages) * static_cast<double>(page));
  for (const int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl {};
    if (::getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) take(static_cast<double>(rl.rlim_cur));
  }
  return limit;
}

}  // namespace ridgeline
