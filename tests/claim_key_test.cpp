// redis/claim_store.hpp: claim keys that no two (prefix, group, key) triples share.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "redis/claim_store.hpp"

using exo::claim_key;

TEST_CASE("a colon in the group cannot make two groups share a claim key") {
    CHECK(claim_key("exo", "billing", "eu:42") != claim_key("exo", "billing:eu", "42"));
    CHECK(claim_key("exo", "billing", "eu:42") == "exo:billing:eu%3A42");
    CHECK(claim_key("exo", "billing:eu", "42") == "exo:billing%3Aeu:42");
}

TEST_CASE("a colon in the prefix cannot make two deployments share a claim key") {
    CHECK(claim_key("a:b", "c", "d") != claim_key("a", "b:c", "d"));
}

TEST_CASE("the escape character itself is escaped, so escaped text cannot pose as a colon") {
    CHECK(claim_key("exo", "g", "a%3Ab") != claim_key("exo", "g", "a:b"));
    CHECK(claim_key("exo", "g", "a%3Ab") == "exo:g:a%253Ab");
}

TEST_CASE("claim keys of many tricky triples are all distinct") {
    const char* parts[] = {"", ":", "%", "%3A", "a", "a:", ":a", "a:b", "a%b", "%25"};
    std::set<std::string> seen;
    int triples = 0;
    for (const char* p : parts)
        for (const char* g : parts)
            for (const char* k : parts) {
                seen.insert(claim_key(p, g, k));
                ++triples;
            }
    CHECK(seen.size() == static_cast<std::size_t>(triples));
}
