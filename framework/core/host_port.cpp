#include "core/host_port.hpp"

#include <charconv>

namespace exo {

std::optional<HostPort> parse_host_port(std::string_view text) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
        return std::nullopt;
    std::string_view host = text.substr(0, colon);
    const std::string_view port_text = text.substr(colon + 1);
    if (host.front() == '[') {
        if (host.size() < 3 || host.back() != ']') return std::nullopt;
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
        return std::nullopt;  // an IPv6 address must be bracketed: [::1]:7000
    }
    int port = 0;
    const char* last = port_text.data() + port_text.size();
    const auto [end, ec] = std::from_chars(port_text.data(), last, port);
    if (ec != std::errc{} || end != last || port < 1 || port > 65535) return std::nullopt;
    return HostPort{std::string(host), port};
}

}  // namespace exo
