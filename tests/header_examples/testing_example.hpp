#pragma once
// testing_example.cpp's test body, for the integration tests to run.
#include <string>

namespace header_examples {

// True when the kit's three checks hold against the PostgreSQL at `uri`.
bool greeting_kit_example(const std::string& uri);

}  // namespace header_examples
