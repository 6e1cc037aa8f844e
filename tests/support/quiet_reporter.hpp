#pragma once
// The main of a test binary: doctest's implementation, a reporter named "quiet" that is the
// default, and the capture of every spdlog line (the framework's, the in-process daemons',
// librdkafka's through the "kafka" logger) into memory.
//
// A passing test case prints one line, `[ok]   <name> (1.2 s)`; a failing one prints
// `[FAIL] <name> (1.2 s)`, doctest's own report of what failed, the log lines captured while
// it ran and whatever the registered failure logs add (the integration tests: the tails of
// the log files of the `exo` child processes). The run ends with doctest's summary lines,
// unchanged (scripts/test.sh reads `[doctest] test cases: ...`).
// `--reporters=console` (or any -r) gives doctest's own output instead, with the logs going
// to stdout as they are written.
//
// Include in exactly one file of a test binary, its main.cpp: this header holds doctest's
// implementation (DOCTEST_CONFIG_IMPLEMENT), and the reporter derives its formatting from
// doctest's console reporter, which only that file can see.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <deque>
#include <iomanip>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace exo::testing {

// An spdlog sink that keeps the last `max_lines` formatted lines, at most `max_bytes` of them,
// in memory. Thread-safe (base_sink's mutex guards every member).
class CapturedLog final : public spdlog::sinks::base_sink<std::mutex> {
public:
    CapturedLog(std::size_t max_lines, std::size_t max_bytes)
        : max_lines_(max_lines), max_bytes_(max_bytes) {}

    void clear() {
        std::lock_guard lock(mutex_);
        lines_.clear();
        bytes_ = 0;
        dropped_ = 0;
    }

    // Whether a line kept contains `text` (for tests of what is logged).
    bool contains(std::string_view text) {
        std::lock_guard lock(mutex_);
        for (const auto& line : lines_)
            if (line.find(text) != std::string::npos) return true;
        return false;
    }

    // Writes the lines kept, after a header. `may_block` false (a crash: the crashing thread
    // may hold the lock) prints nothing rather than wait for the lock.
    void print(std::ostream& out, bool may_block) {
        std::unique_lock lock(mutex_, std::defer_lock);
        if (may_block)
            lock.lock();
        else if (!lock.try_lock()) {
            out << "---- log lines: not printed (the log was being written when it crashed)\n";
            return;
        }
        out << "---- log lines while it ran (spdlog and librdkafka): " << lines_.size();
        if (dropped_ > 0) out << " (the " << dropped_ << " before them dropped)";
        out << " ----\n";
        for (const auto& line : lines_) out << line;
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t formatted;
        formatter_->format(msg, formatted);
        lines_.emplace_back(formatted.data(), formatted.size());
        bytes_ += formatted.size();
        while (lines_.size() > max_lines_ || (bytes_ > max_bytes_ && lines_.size() > 1)) {
            bytes_ -= lines_.front().size();
            lines_.pop_front();
            ++dropped_;
        }
    }
    void flush_() override {}

private:
    const std::size_t max_lines_;
    const std::size_t max_bytes_;
    std::deque<std::string> lines_;
    std::size_t bytes_ = 0;
    std::size_t dropped_ = 0;
};

// The capture the quiet reporter clears and prints; null until run_tests installs it.
inline std::shared_ptr<CapturedLog>& captured_log() {
    static std::shared_ptr<CapturedLog> log;
    return log;
}

// More logs of a test case than spdlog's: forgotten when a test case starts, printed after
// the captured lines when one fails. Register before run_tests (not thread-safe).
struct FailureLog {
    void (*forget)();
    void (*print)(std::ostream& out);
};
inline std::vector<FailureLog>& failure_logs() {
    static std::vector<FailureLog> logs;
    return logs;
}

namespace {

// Anonymous: doctest::ConsoleReporter lives in doctest's anonymous namespace (this file is
// included once per binary, so nothing is duplicated).
class QuietReporter final : public doctest::IReporter {
public:
    explicit QuietReporter(const doctest::ContextOptions& options)
        : options_(options), out_(*options.cout), details_(options, report_), summary_(options) {}

    void report_query(const doctest::QueryData& query) override { summary_.report_query(query); }
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats& stats) override { summary_.test_run_end(stats); }

    void test_case_start(const doctest::TestCaseData& test) override {
        test_ = &test;
        crashed_ = false;
        report_.str("");
        details_.test_case_start(test);
        if (auto& log = captured_log()) log->clear();
        for (const auto& extra : failure_logs()) extra.forget();
    }
    void test_case_reenter(const doctest::TestCaseData& test) override {
        details_.test_case_reenter(test);
    }
    void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
        details_.test_case_end(stats);
        const bool failed = !stats.testCaseSuccess;
        std::ostringstream seconds;  // not on out_: its format flags would stay set
        seconds << std::fixed << std::setprecision(1) << stats.seconds;
        out_ << (failed ? doctest::Color::Red : doctest::Color::Green)
             << (failed ? "[FAIL] " : "[ok]   ") << doctest::Color::None << test_->m_name << " ("
             << seconds.str() << " s)\n";
        if (failed || options_.success) out_ << report_.str();
        if (failed) {
            if (auto& log = captured_log()) log->print(out_, !crashed_);
            for (const auto& extra : failure_logs()) extra.print(out_);
            out_ << "---- end of " << test_->m_name << " ----\n";
        }
        out_.flush();  // progress shows at once, also through a pipe
    }
    void test_case_exception(const doctest::TestCaseException& e) override {
        if (e.is_crash) crashed_ = true;
        details_.test_case_exception(e);
    }

    void subcase_start(const doctest::SubcaseSignature& subcase) override {
        details_.subcase_start(subcase);
    }
    void subcase_end() override { details_.subcase_end(); }
    void log_assert(const doctest::AssertData& a) override { details_.log_assert(a); }
    void log_message(const doctest::MessageData& m) override { details_.log_message(m); }
    void test_case_skipped(const doctest::TestCaseData&) override {}

private:
    const doctest::ContextOptions& options_;
    std::ostream& out_;
    const doctest::TestCaseData* test_ = nullptr;
    bool crashed_ = false;
    // doctest's console report of the current test case (failed assertions with their
    // values, exceptions, subcases), printed if it fails. Declared before details_, which
    // writes to it.
    std::ostringstream report_;
    doctest::ConsoleReporter details_;
    doctest::ConsoleReporter summary_;  // writes to out_: the summary and query answers
};

// Whether the command line names reporters (-r=, --reporters=, with or without doctest's
// "dt-" prefix), and if so whether "quiet" is one of them.
struct ReporterChoice {
    bool named = false;
    bool quiet = false;
};
inline ReporterChoice reporter_choice(int argc, const char* const* argv) {
    ReporterChoice choice;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (!arg.starts_with('-')) continue;
        arg.remove_prefix(arg.find_first_not_of('-') == std::string_view::npos
                              ? arg.size()
                              : arg.find_first_not_of('-'));
        if (arg.starts_with("dt-")) arg.remove_prefix(3);
        for (std::string_view option : {"r=", "reporters="})
            if (arg.starts_with(option)) {
                choice.named = true;
                if (arg.find("quiet") != std::string_view::npos) choice.quiet = true;
            }
    }
    return choice;
}

}  // namespace

// Runs the test cases doctest's way (every doctest option works), with the quiet reporter
// unless the command line names reporters. With it, spdlog's default logger (and every
// logger cloned from it later: the workers', "kafka") writes to the in-memory capture,
// bounded to the last 5,000 lines or 4 MB.
inline int run_tests(int argc, char** argv) {
    doctest::Context context(argc, argv);
    const auto choice = reporter_choice(argc, argv);
    if (!choice.named) context.setOption("reporters", "quiet");
    if (!choice.named || choice.quiet) {
        captured_log() = std::make_shared<CapturedLog>(5000, 4 * 1024 * 1024);
        spdlog::set_default_logger(std::make_shared<spdlog::logger>("", captured_log()));
    }
    return context.run();
}

}  // namespace exo::testing

DOCTEST_REGISTER_REPORTER("quiet", 1, exo::testing::QuietReporter);
