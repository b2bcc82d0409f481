// ridgeline: where does the time go, and what bounds it?
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "common.hpp"

int main(int argc, char** argv) {
  const int status = ridgeline::cli::run(argc, argv, std::cout, std::cerr);
  // What could not be written is not a result: a full disk, a closed stdout or pipe.
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (failed) {
    const int e = errno;
    std::cerr << "ridgeline: error: stdout: the output could not be written (" << (e != 0 ? std::strerror(e) : "write error") << ")\n";
    return status == 0 ? 1 : status;
  }
  return status;
}
