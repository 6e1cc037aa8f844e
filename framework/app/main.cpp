#include "app/cli.hpp"

int main(int argc, char** argv) {
    return exo::run_cli(argc, argv);
}
