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
