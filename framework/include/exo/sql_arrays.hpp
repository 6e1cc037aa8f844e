#pragma once
// PostgreSQL array literals for set-based statements (a batch handler's
// multi-row writes, exo's own): libpqxx 6.4 has no array parameters, so arrays
// travel as one text parameter each and the statement casts them
// (`$2::text[]`) and unnests them:
//   tx.exec_params("INSERT INTO t (id, n) SELECT * FROM unnest($1::text[], $2::bigint[])",
//                  exo::text_array(ids), exo::int_array(counts));
// Elements must be text PostgreSQL can store (no NUL byte, valid UTF-8).
#include <string>
#include <string_view>
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
        std::string_view rest = values[i];
        for (;;) {  // the runs between characters to escape in one go
            const auto special = rest.find_first_of("\"\\");
            out.append(rest.substr(0, special));
            if (special == std::string_view::npos) break;
            out += '\\';
            out += rest[special];
            rest.remove_prefix(special + 1);
        }
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
