#pragma once
// Where a command's failures are written for the operator: stderr, with the
// loaded configuration's secrets masked (core/secrets.hpp Redactor: by value,
// and every URI's password even before a config is loaded) and control
// characters escaped (core/text.hpp one_line_text, each line of a multi-line
// message on its own, so a configuration's list of problems keeps its lines but
// an ESC or a bidirectional override in a quoted key reaches no terminal).
//
// run_cli owns one for the process and prints every command's uncaught
// exception through it; load_config gives it the configuration's secrets as
// soon as they are known, so no command can forget to mask its errors. A
// command that reports a failure it survives (dlq list without Kafka) writes it
// here too.
//
// Thread-safety: none; the command's own thread uses it.
#include <string>
#include <string_view>

#include "core/secrets.hpp"

namespace exo {

class ErrorOutput {
public:
    // The secrets of the configuration the command loaded.
    void use(Redactor redactor) { redactor_ = std::move(redactor); }

    // `message` as it may be shown: secrets masked, control characters escaped.
    std::string shown(std::string_view message) const;

    // Writes "exo <command>: <shown(message)>\n" to stderr.
    void print(std::string_view command, std::string_view message) const;

private:
    Redactor redactor_;
};

}  // namespace exo
