#pragma once
// "host:port" as written in redis.cluster and in Redis' MOVED/ASK replies. Pure.
#include <optional>
#include <string>
#include <string_view>

namespace exo {

struct HostPort {
    std::string host;
    int port = 0;
    bool operator==(const HostPort&) const = default;
    std::string name() const { return host + ":" + std::to_string(port); }
};

// nullopt if `text` is not "host:port" with a port in 1..65535; the host may be a
// name, an IPv4 address, or an IPv6 address in brackets ("[::1]:7000").
std::optional<HostPort> parse_host_port(std::string_view text);

}  // namespace exo
