#include <iostream>

#include "cli/cli.h"

int main(int argc, char** argv) { return mmsim::cli::run_cli(argc, argv, std::cout, std::cerr); }
