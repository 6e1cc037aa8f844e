#pragma once
// PostgreSQL array literals for set-based statements (a batch handler's
// multi-row writes, exo's own): libpqxx 6.4 has no array parameters, so arrays
// travel as one text parameter each and the statement casts them
// (`$2::text[]`) and unnests them: tests/header_examples/batch_handler_example.cpp
// (compiled with the unit tests).
// Elements must be text PostgreSQL can store (no NUL byte, valid UTF-8).
#include <string>
#include <vector>

namespace exo {

// {"a","b\"c"}: every element quoted, so NULL, empty strings and commas are plain text.
inline std::string text_array(const std::vector<std::string>& values) {
    std::size_t size = 2;
    for (const auto& v : values) size += v.size() + 3;
    std::string out;
    out.reserve(size);
    out += '{';
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out += ',';
        out += '"';
        const std::string& v = values[i];
        std::size_t run = 0;  // the runs between characters to escape in one go
        for (std::size_t j = 0; j < v.size(); ++j) {
            if (v[j] != '"' && v[j] != '\\') continue;
            out.append(v, run, j - run);
            out += '\\';
            run = j;  // the escaped character starts the next run
        }
        out.append(v, run, v.size() - run);
        out += '"';
    }
    out += '}';
    return out;
}

template <class Int>
std::string int_array(const std::vector<Int>& values) {
    std::string out = "{";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i > 0) out += ',';
        out += std::to_string(values[i]);
    }
    return out + "}";
}

}  // namespace exo
