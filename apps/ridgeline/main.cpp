// ridgeline: where does the time go, and what bounds it?
#include <iostream>

#include "common.hpp"

int main(int argc, char** argv) { return ridgeline::cli::run(argc, argv, std::cout, std::cerr); }
