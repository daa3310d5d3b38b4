// OpenSSL 3.0 headers plus static inline wrappers for the macros Swift cannot import.
#pragma once
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/core_names.h>

static inline long swiftrtc_BIO_set_mem_eof_return(BIO *b, long v) { return BIO_set_mem_eof_return(b, v); }
static inline long swiftrtc_DTLS_set_link_mtu(SSL *s, long mtu) { return DTLS_set_link_mtu(s, mtu); }
static inline long swiftrtc_DTLSv1_get_timeout(SSL *s, struct timeval *tv) { return DTLSv1_get_timeout(s, tv); }
static inline long swiftrtc_DTLSv1_handle_timeout(SSL *s) { return DTLSv1_handle_timeout(s); }
static inline void swiftrtc_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline EVP_PKEY *swiftrtc_EVP_EC_gen_p256(void) { return EVP_EC_gen("P-256"); }

// DTLS (Sources/DTLS): SSL_CTX macros.
static inline long swiftrtc_SSL_CTX_set_min_proto_version(SSL_CTX *c, int v) { return SSL_CTX_set_min_proto_version(c, v); }
static inline long swiftrtc_SSL_CTX_set_max_proto_version(SSL_CTX *c, int v) { return SSL_CTX_set_max_proto_version(c, v); }
static inline long swiftrtc_SSL_CTX_set1_groups_list(SSL_CTX *c, const char *list) { return SSL_CTX_set1_groups_list(c, list); }
static inline long swiftrtc_SSL_CTX_set_session_cache_mode(SSL_CTX *c, long mode) { return SSL_CTX_set_session_cache_mode(c, mode); }
// SSL_OP_* are built with SSL_OP_BIT(n), which Swift does not import.
static inline uint64_t swiftrtc_SSL_CTX_set_dtls_srtp_options(SSL_CTX *c) { return SSL_CTX_set_options(c, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET | SSL_OP_NO_ENCRYPT_THEN_MAC); }

// SRTP helpers (Sources/SRTP): HMAC-SHA1 over plain SHA_CTX values with precomputed pads.
// OpenSSL 3.0's EVP_MAC HMAC duplicates provider digest contexts (malloc + free) twice per
// call; copying a SHA_CTX by value costs nothing. SHA1_* are deprecated in 3.0 but reach the
// same SHA-NI code.
#include <openssl/sha.h>
#include <string.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
typedef struct { SHA_CTX inner; SHA_CTX outer; } swiftrtc_hmac_sha1_key;
static inline int swiftrtc_hmac_sha1_init(swiftrtc_hmac_sha1_key *k, const unsigned char *key, size_t len) {
    unsigned char block[64] = {0};
    if (len > 64) { if (!SHA1(key, len, block)) return 0; } else if (len) { memcpy(block, key, len); }
    unsigned char ipad[64], opad[64];
    for (int i = 0; i < 64; i++) { ipad[i] = block[i] ^ 0x36; opad[i] = block[i] ^ 0x5c; }
    int ok = SHA1_Init(&k->inner) && SHA1_Update(&k->inner, ipad, 64) && SHA1_Init(&k->outer) && SHA1_Update(&k->outer, opad, 64);
    OPENSSL_cleanse(block, 64); OPENSSL_cleanse(ipad, 64); OPENSSL_cleanse(opad, 64);
    return ok;
}
static inline int swiftrtc_hmac_sha1(const swiftrtc_hmac_sha1_key *k, const void *a, size_t alen,
                                     const void *b, size_t blen, unsigned char out[20]) {
    unsigned char inner[20];
    SHA_CTX c = k->inner;
    if (!SHA1_Update(&c, a, alen) || (blen && !SHA1_Update(&c, b, blen)) || !SHA1_Final(inner, &c)) return 0;
    c = k->outer;
    return SHA1_Update(&c, inner, 20) && SHA1_Final(out, &c);
}
#pragma GCC diagnostic pop

// TLS client (Sources/HTTP): macros over SSL_ctrl / SSL_CTX_ctrl and SSL_OP_BIT options.
static inline long swiftrtc_SSL_set_tlsext_host_name(SSL *s, const char *name) { return SSL_set_tlsext_host_name(s, name); }
// OpenSSL 3 puts errno in the code of a system error (ERR_SYSTEM_ERROR); 0 for other errors.
static inline int swiftrtc_ERR_system_errno(unsigned long e) { return ERR_SYSTEM_ERROR(e) ? (int)(e & ERR_SYSTEM_MASK) : 0; }
static inline long swiftrtc_SSL_CTX_set_tls_client_mode(SSL_CTX *c) { return SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER); }
// A peer closing without close_notify reads as end of stream; HTTP framing catches truncation.
static inline uint64_t swiftrtc_SSL_CTX_set_tls_client_options(SSL_CTX *c) { return SSL_CTX_set_options(c, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION); }
