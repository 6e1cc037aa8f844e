#include "core/sha256.hpp"

#include <openssl/evp.h>
#include <stdexcept>

namespace exo {

std::string sha256_hex(std::string_view bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 failed (OpenSSL EVP_Digest)");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * std::size_t{size});
    for (unsigned int i = 0; i < size; ++i) {
        out.push_back(kHex[digest[i] >> 4]);
        out.push_back(kHex[digest[i] & 0xF]);
    }
    return out;
}

}  // namespace exo
