// observability: where the HTTP endpoint (health, readiness, metrics) listens.
// Only parsed here; absent means no endpoint.
#include <algorithm>
#include <cctype>
#include <variant>

#include "config/sections.hpp"

namespace exo::config_schema {
namespace {

constexpr std::string_view kExample = "e.g. listen: \"127.0.0.1:9090\"";

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool is_host_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.';
}

// A DNS name or IPv4 address: letters, digits, '-' and '.', not starting or
// ending with '-' or '.'.
bool is_plain_host(std::string_view host) {
    return !host.empty() && std::all_of(host.begin(), host.end(), is_host_char) &&
           host.front() != '-' && host.front() != '.' && host.back() != '-' && host.back() != '.';
}

bool is_ipv6_text(std::string_view host) {
    return host.find(':') != std::string_view::npos &&
           std::all_of(host.begin(), host.end(), [](char c) {
               return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
           });
}

// What is wrong with "HOST:PORT", or the address.
std::variant<ObservabilityConfig::Listen, std::string> parse_listen(std::string_view text) {
    std::string_view host;
    std::string_view port;
    if (text.starts_with('[')) {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos)
            return "an IPv6 address in '[' needs its ']': write \"[::1]:9090\"";
        host = text.substr(1, close - 1);
        if (!is_ipv6_text(host)) return "is not an IPv6 address in brackets: " + in_quotes(host);
        if (close + 1 >= text.size() || text[close + 1] != ':')
            return "has no port: write \"[" + std::string(host) + "]:9090\"";
        port = text.substr(close + 2);
    } else {
        const std::size_t colon = text.rfind(':');
        if (colon == std::string_view::npos && !text.empty() &&
            std::all_of(text.begin(), text.end(), is_digit))
            return "has no host: write \"127.0.0.1:" + std::string(text) +
                   "\" for this machine only or \"0.0.0.0:" + std::string(text) +
                   "\" for every interface";
        if (colon == std::string_view::npos)
            return "has no port: write HOST:PORT, " + std::string(kExample);
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string_view::npos)
            return "an IPv6 address goes in brackets: write \"[" + std::string(host) +
                   "]:" + std::string(port) + "\"";
        if (host.empty())
            return "has no host: write \"127.0.0.1:" + std::string(port) +
                   "\" for this machine only or \"0.0.0.0:" + std::string(port) +
                   "\" for every interface";
        if (!is_plain_host(host))
            return "host " + in_quotes(host) +
                   " is not a host name or IP address (write 0.0.0.0 for every interface)";
    }
    const bool digits =
        !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), is_digit);
    const int number = digits ? std::stoi(std::string(port)) : 0;
    if (number < 1 || number > 65535)
        return "the port must be a whole number between 1 and 65535, got " + in_quotes(port);
    return ObservabilityConfig::Listen{std::string(host), number};
}

void read_listen(const Reader& observability, ObservabilityConfig& out) {
    const std::optional<std::string> text =
        observability.scalar("listen", "an address as HOST:PORT (" + std::string(kExample) + ")");
    if (!text) return;
    auto parsed = parse_listen(*text);
    if (auto* problem = std::get_if<std::string>(&parsed)) {
        observability.problem("listen", in_quotes(*text) + ": " + *problem);
        return;
    }
    out.listen = std::get<ObservabilityConfig::Listen>(std::move(parsed));
}

void print_listen(YAML::Emitter& e, const ObservabilityConfig& o, const Config&) {
    const bool ipv6 = o.listen->host.find(':') != std::string::npos;
    yaml_writer::text(e, "listen",
                      (ipv6 ? "[" + o.listen->host + "]" : o.listen->host) + ":" +
                          std::to_string(o.listen->port));
}

}  // namespace

// No listen key: no endpoint (printed "observability: {}").
const Section<ObservabilityConfig>& observability_section() {
    static const Section<ObservabilityConfig> section(
        "observability",
        {
            custom<ObservabilityConfig>(
                "listen", read_listen, print_listen, "absent: no endpoint",
                R"md(`"HOST:PORT"` of the HTTP endpoint (`/metrics`, `/healthz`, `/readyz`, `/status`), e.g. `"127.0.0.1:9464"`, `"0.0.0.0:9464"` or `"[::1]:9464"`; a port in use fails `exo run` at once (exit 2))md")
                .printed_if(
                    [](const Config&, const ObservabilityConfig& o) { return o.enabled(); }),
        });
    return section;
}

}  // namespace exo::config_schema
