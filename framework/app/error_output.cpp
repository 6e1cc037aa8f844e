#include "app/error_output.hpp"

#include <iostream>

#include "core/text.hpp"

namespace exo {

std::string ErrorOutput::shown(std::string_view message) const {
    const std::string masked = redactor_.redact(message);
    std::string out;
    std::string_view rest = masked;
    for (std::size_t newline = rest.find('\n'); newline != std::string_view::npos;
         newline = rest.find('\n')) {
        out += one_line_text(rest.substr(0, newline)) + "\n";
        rest.remove_prefix(newline + 1);
    }
    return out + one_line_text(rest);
}

void ErrorOutput::print(std::string_view command, std::string_view message) const {
    std::cerr << "exo " << shown(command) << ": " << shown(message) << "\n";
}

}  // namespace exo
