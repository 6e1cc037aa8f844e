#pragma once
// Runs the real `exo` binary as a child process, for tests of what only a
// separate process shows: a SIGKILL at a failpoint, exit codes, SIGTERM.
#include <signal.h>  // NOLINT(modernize-deprecated-headers): kill() is POSIX, declared here
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace exo::testing {

// The log files of the children started since the current test case began. The test
// reporter (tests/support/quiet_reporter.hpp, registered in main.cpp) forgets them when a
// test case starts and prints their tails when it fails. Thread-safe.
class ChildLogs {
public:
    static void remember(const std::string& log_file) {
        std::lock_guard lock(mutex());
        auto& files = list();
        if (std::find(files.begin(), files.end(), log_file) == files.end())
            files.push_back(log_file);
    }
    static void forget() {
        std::lock_guard lock(mutex());
        list().clear();
    }
    // The last 200 lines of each file, after a header naming it.
    static void print(std::ostream& out) {
        constexpr std::size_t kTail = 200;
        std::lock_guard lock(mutex());
        for (const auto& path : list()) {
            std::ifstream in(path);
            std::deque<std::string> tail;
            std::size_t total = 0;
            for (std::string line; std::getline(in, line); ++total) {
                tail.push_back(std::move(line));
                if (tail.size() > kTail) tail.pop_front();
            }
            out << "---- child process log " << path << ": ";
            if (!in.eof())
                out << "could not be read";
            else if (total > tail.size())
                out << "the last " << tail.size() << " of " << total << " lines";
            else
                out << total << " lines";
            out << " ----\n";
            for (const auto& line : tail) out << line << '\n';
        }
    }

private:
    static std::mutex& mutex() {
        static std::mutex m;
        return m;
    }
    static std::vector<std::string>& list() {
        static std::vector<std::string> files;
        return files;
    }
};

class ChildProcess {
public:
    // Starts `program args...` with `extra_env` added to this process's environment;
    // stdout and stderr go to `log_file` (ChildLogs remembers it for the test's report).
    ChildProcess(const std::string& program, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& extra_env, const std::string& log_file) {
        ChildLogs::remember(log_file);
        pid_ = ::fork();
        if (pid_ == 0) {
            for (const auto& [k, v] : extra_env) ::setenv(k.c_str(), v.c_str(), 1);
            FILE* log = std::fopen(log_file.c_str(), "w");
            if (log) {
                ::dup2(fileno(log), 1);
                ::dup2(fileno(log), 2);
            }
            std::vector<char*> argv{const_cast<char*>(program.c_str())};
            for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            // The test process blocks SIGTERM/SIGINT in no thread, but be explicit.
            sigset_t none;
            sigemptyset(&none);
            ::sigprocmask(SIG_SETMASK, &none, nullptr);
            ::execv(program.c_str(), argv.data());
            ::_exit(127);
        }
    }
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;
    ~ChildProcess() {
        if (pid_ > 0 && !status_) {
            ::kill(pid_, SIGKILL);
            wait(std::chrono::seconds(10));
        }
    }

    void signal(int signo) { ::kill(pid_, signo); }
    pid_t pid() const { return pid_; }

    // True once the process is stopped (SIGSTOP): state 'T' in /proc/<pid>/stat.
    bool stopped() const {
        FILE* f = std::fopen(("/proc/" + std::to_string(pid_) + "/stat").c_str(), "r");
        if (!f) return false;
        char buf[512] = {0};
        std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        std::fclose(f);
        std::string stat(buf, n);
        auto close = stat.rfind(')');
        return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'T';
    }

    // The raw wait status, or nullopt if still running after `timeout`.
    std::optional<int> wait(std::chrono::milliseconds timeout) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!status_) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                status_ = status;
                break;
            }
            if (std::chrono::steady_clock::now() >= deadline) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return status_;
    }

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
};

// How a child run to its end finished, and everything it wrote.
struct FinishedChild {
    int exit_code = -1;  // -1 when a signal ended it
    int signal = 0;      // the signal that ended it; 0 if it exited
    std::string output;  // its stdout and stderr
};

// Runs `program args...` (see ChildProcess) to its end; nullopt if it still runs
// after `timeout` (it is then killed).
inline std::optional<FinishedChild> run_to_end(const std::string& program,
                                               const std::vector<std::string>& args,
                                               const std::map<std::string, std::string>& env,
                                               const std::string& log_file,
                                               std::chrono::milliseconds timeout) {
    ChildProcess child(program, args, env, log_file);
    auto status = child.wait(timeout);
    if (!status) return std::nullopt;
    std::ifstream in(log_file);
    std::stringstream text;
    text << in.rdbuf();
    return FinishedChild{WIFEXITED(*status) ? WEXITSTATUS(*status) : -1,
                         WIFSIGNALED(*status) ? WTERMSIG(*status) : 0, text.str()};
}

}  // namespace exo::testing
