#include "observability/http_endpoint.hpp"

#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include <exo/errors.hpp>
#include "observability/connection_deadlines.hpp"
#include "observability/health.hpp"
#include "observability/metrics_text.hpp"
#include "observability/mhd_handles.hpp"
#include "observability/status_json.hpp"

namespace exo {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// What one client, and all of them, may cost the process. The endpoint serves four small GETs
// to a scraper and a few probes, so every bound is far above what they need and far below
// what would hurt the pipeline (issue 31 measured each attack these stop).
struct Limits {
    // Connections at once, in all: at most this many descriptors (plus the listening socket,
    // MHD's epoll and its wake-up descriptor) are the endpoint's. At the cap MHD stops
    // accepting: further clients wait in the kernel's listen queue (kBacklog), which holds no
    // descriptor of this process.
    unsigned connections = 32;
    // Connections at once from one address: the one beyond is accepted and closed at once, so
    // one misbehaving client cannot take the slots a probe or a scraper from elsewhere needs.
    unsigned per_address = 8;
    // Bytes of request line and headers (with MHD's bookkeeping of them) per connection; a
    // longer request line is answered 414, more header bytes or lines 431, and the connection
    // closed. A scrape's request is a few hundred bytes.
    std::size_t request_bytes = 8 * 1024;
    // From accept to close, whatever the client does (ConnectionDeadlines): a slow or
    // trickling client frees its slot by then.
    std::chrono::milliseconds deadline = 5s;
    // MHD's own timeout, of inactivity, in whole seconds: a silent client goes by then even if
    // the deadline's watchdog were late.
    unsigned idle_seconds = 5;
    // The kernel's queue of connections not yet accepted.
    int backlog = 64;
};
constexpr Limits kLimits;

// Every failure to listen is said here, in one form: the address, the reason, what to do.
[[noreturn]] void cannot_listen(const ObservabilityConfig::Listen& listen,
                                const std::string& reason) {
    const std::string address =
        (listen.host.find(':') == std::string::npos ? listen.host : "[" + listen.host + "]") + ":" +
        std::to_string(listen.port);
    throw UsageError("observability.listen: cannot listen on " + address + " (" + reason +
                     "): choose another address, or remove observability.listen to run "
                     "without the endpoint");
}

// A listening socket on the first of the host's addresses that can be bound. exo makes it
// rather than MHD so that a failure names its reason (the errno), and so that a host name
// resolves as it did before (getaddrinfo, AI_PASSIVE); an IPv6 socket takes IPv4 too where
// the system's default says so (net.ipv6.bindv6only).
mhd::Socket listen_socket(const ObservabilityConfig::Listen& listen) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(listen.port);
    if (int rc = ::getaddrinfo(listen.host.c_str(), port.c_str(), &hints, &found); rc != 0)
        cannot_listen(listen, ::gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
    int error = EADDRNOTAVAIL;
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        mhd::Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        if (s.get() < 0) {
            error = errno;
            continue;
        }
        const int on = 1;
        ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (::bind(s.get(), a->ai_addr, a->ai_addrlen) == 0 &&
            ::listen(s.get(), kLimits.backlog) == 0)
            return s;
        error = errno;
    }
    cannot_listen(listen, std::strerror(error));
}

}  // namespace

// MHD calls these on its one thread (MHD_USE_EPOLL_INTERNAL_THREAD): an epoll loop that
// serves every connection as its bytes arrive, so a slow client delays nobody else.
struct ObservabilityEndpoint::Server {
    explicit Server(const ObservabilityEndpoint& owner) : endpoint(owner) {}

    static MHD_Result answer(void* cls, MHD_Connection* connection, const char* url,
                             const char* method, const char* /*version*/,
                             const char* /*upload_data*/, std::size_t* /*upload_data_size*/,
                             void** /*request*/) {
        const auto& self = *static_cast<const Server*>(cls);
        // Called once the headers are in, before any body byte is read. Answering now makes
        // MHD discard the request's body unread and close the connection after the answer.
        const std::string_view m(method);
        if (m != MHD_HTTP_METHOD_GET && m != MHD_HTTP_METHOD_HEAD)
            return queue(connection, {MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n",
                                      "text/plain; charset=utf-8"});
        return queue(connection, self.endpoint.reply(url));
    }

    static void notify(void* cls, MHD_Connection* connection, void** /*socket_context*/,
                       MHD_ConnectionNotificationCode code) {
        auto& deadlines = static_cast<Server*>(cls)->deadlines;
        if (code == MHD_CONNECTION_NOTIFY_CLOSED) return deadlines.closed(connection);
        const MHD_ConnectionInfo* info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (info != nullptr) deadlines.opened(connection, info->connect_fd);
    }

    // MHD's own messages (a connection refused at a limit, a client gone): at debug, since a
    // client could otherwise fill the log.
    static void log(void* /*cls*/, const char* format, va_list args) {
        char text[512];
        std::vsnprintf(text, sizeof text, format, args);
        std::string_view line(text);
        while (!line.empty() && line.back() == '\n') line.remove_suffix(1);
        spdlog::debug("observability endpoint: {}", line);
    }

    static MHD_Result queue(MHD_Connection* connection, const Reply& reply) {
        mhd::ResponseHandle response(MHD_create_response_from_buffer(
            reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_MUST_COPY));
        if (!response) return MHD_NO;  // out of memory: MHD closes the connection
        const std::string type(reply.content_type);
        MHD_add_response_header(response.get(), MHD_HTTP_HEADER_CONTENT_TYPE, type.c_str());
        // One request per connection: the connection's deadline is the request's.
        MHD_add_response_header(response.get(), MHD_HTTP_HEADER_CONNECTION, "close");
        if (reply.status == MHD_HTTP_METHOD_NOT_ALLOWED)
            MHD_add_response_header(response.get(), MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        return MHD_queue_response(connection, reply.status, response.get());
    }

    const ObservabilityEndpoint& endpoint;
    ConnectionDeadlines deadlines{kLimits.deadline, 250ms};
    mhd::DaemonHandle daemon;  // last: stopped first, while the members above still live
};

ObservabilityEndpoint::Reply ObservabilityEndpoint::reply(std::string_view path) const {
    constexpr std::string_view kJson = "application/json";
    if (path != "/metrics" && path != "/healthz" && path != "/readyz" && path != "/status")
        return {404, "not found: /metrics, /healthz, /readyz or /status\n",
                "text/plain; charset=utf-8"};
    static const PipelineStats kNothingYet;
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    const auto status = daemon_ ? daemon_->status() : DaemonStatus{};
    // Starting (waiting for PostgreSQL or for Kafka topics): alive, since a restart
    // would wait for the same thing, and not ready, naming the wait. A liveness probe that
    // failed here restarted a daemon that was doing the right thing, again and again.
    HealthVerdict live{true, ""};
    HealthVerdict ready{false, starting_};
    if (daemon_) {
        live = liveness(status, now, bound_);
        ready = readiness(status, now, bound_);
    }
    if (path == "/metrics")
        return {
            200,
            render_metrics(daemon_ ? daemon_->stats() : kNothingYet, status, ready.ok, EXO_VERSION),
            kPrometheusTextType};
    if (path == "/status") return {200, status_json(status, live, ready, now), kJson};
    const HealthVerdict& v = path == "/healthz" ? live : ready;
    nlohmann::json body{{"ok", v.ok}};
    if (!v.ok) body["reason"] = v.reason;
    if (!daemon_) body["phase"] = starting_;
    return {v.ok ? 200u : 503u, body.dump(), kJson};
}

ObservabilityEndpoint::ObservabilityEndpoint(const ObservabilityConfig::Listen& listen,
                                             std::chrono::milliseconds liveness_bound)
    : bound_(liveness_bound), server_(std::make_unique<Server>(*this)) {
    mhd::Socket socket = listen_socket(listen);
    auto* server = server_.get();
    server->daemon.reset(MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, nullptr, nullptr, &Server::answer,
        server, MHD_OPTION_LISTEN_SOCKET, socket.release_to_mhd(), MHD_OPTION_CONNECTION_LIMIT,
        kLimits.connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, kLimits.per_address,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, kLimits.request_bytes, MHD_OPTION_CONNECTION_TIMEOUT,
        kLimits.idle_seconds, MHD_OPTION_NOTIFY_CONNECTION, &Server::notify, server,
        MHD_OPTION_EXTERNAL_LOGGER, &Server::log, server, MHD_OPTION_END));
    if (!server->daemon)
        cannot_listen(listen,
                      "libmicrohttpd could not start (run with logging.level: debug "
                      "for its reason)");
    spdlog::info("observability endpoint on http://{}:{} (/metrics /healthz /readyz /status)",
                 listen.host.find(':') == std::string::npos ? listen.host : "[" + listen.host + "]",
                 listen.port);
}

ObservabilityEndpoint::~ObservabilityEndpoint() {
    detach();
    server_.reset();
}

void ObservabilityEndpoint::starting(std::string reason) {
    std::lock_guard lock(mutex_);
    starting_ = std::move(reason);
}

void ObservabilityEndpoint::attach(const ObservedDaemon& daemon) {
    std::lock_guard lock(mutex_);
    daemon_ = &daemon;
}

void ObservabilityEndpoint::detach() {
    std::lock_guard lock(mutex_);
    daemon_ = nullptr;
    starting_ = "stopping";
}

}  // namespace exo
