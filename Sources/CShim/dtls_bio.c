// A datagram-preserving BIO for sans-I/O DTLS over OpenSSL 3.0, which has no BIO_s_dgram_mem
// (added in 3.2). Memory BIOs join datagrams into a byte stream, which loses the record
// grouping DTLS depends on (and that peers such as Chromium produce).
#include "CShim.h"
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// Bounds memory if the owner stops draining or a peer floods us; UDP would drop as well.
#define SWIFTRTC_DGRAM_QUEUE_LIMIT 1024

typedef struct swiftrtc_datagram {
    struct swiftrtc_datagram *next;
    size_t length;
    unsigned char bytes[];
} swiftrtc_datagram;

typedef struct {
    swiftrtc_datagram *head;
    swiftrtc_datagram *tail;
    size_t count;
} swiftrtc_queue;

typedef struct {
    swiftrtc_queue incoming;
    swiftrtc_queue outgoing;
    long mtu;
    unsigned int initial_timeout_us;
    unsigned int max_timeout_us;
} swiftrtc_dgram_link;

static int queue_push(swiftrtc_queue *q, const void *bytes, size_t length) {
    if (q->count >= SWIFTRTC_DGRAM_QUEUE_LIMIT) return 0;
    swiftrtc_datagram *d = malloc(sizeof(swiftrtc_datagram) + length);
    if (d == NULL) return 0;
    d->next = NULL;
    d->length = length;
    if (length > 0) memcpy(d->bytes, bytes, length);
    if (q->tail != NULL) q->tail->next = d; else q->head = d;
    q->tail = d;
    q->count++;
    return 1;
}

static void queue_drop_head(swiftrtc_queue *q) {
    swiftrtc_datagram *d = q->head;
    if (d == NULL) return;
    q->head = d->next;
    if (q->head == NULL) q->tail = NULL;
    q->count--;
    free(d);
}

static void queue_clear(swiftrtc_queue *q) {
    while (q->head != NULL) queue_drop_head(q);
}

static int dgram_write(BIO *b, const char *in, int inl) {
    swiftrtc_dgram_link *link = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (link == NULL || inl < 0 || (in == NULL && inl > 0)) return -1;
    // A full queue drops the datagram but reports it sent, like a full socket buffer.
    queue_push(&link->outgoing, in, (size_t)inl);
    return inl;
}

static int dgram_read(BIO *b, char *out, int outl) {
    swiftrtc_dgram_link *link = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (link == NULL || out == NULL || outl < 0) return -1;
    swiftrtc_datagram *d = link->incoming.head;
    if (d == NULL) {
        BIO_set_retry_read(b);
        return -1;
    }
    // Like recvfrom: a datagram longer than the buffer is truncated, never split across reads.
    size_t n = d->length < (size_t)outl ? d->length : (size_t)outl;
    memcpy(out, d->bytes, n);
    queue_drop_head(&link->incoming);
    return (int)n;
}

static int dgram_puts(BIO *b, const char *str) {
    return dgram_write(b, str, (int)strlen(str));
}

static long dgram_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)ptr;
    swiftrtc_dgram_link *link = BIO_get_data(b);
    if (link == NULL) return 0;
    switch (cmd) {
    case BIO_CTRL_FLUSH:
    case BIO_CTRL_DUP:
        return 1;
    case BIO_CTRL_PENDING:
        return link->incoming.head != NULL ? (long)link->incoming.head->length : 0;
    case BIO_CTRL_WPENDING:
        // Each write is already its own datagram: nothing waits to be joined with the next one.
        return 0;
    case BIO_CTRL_GET_CLOSE:
        return BIO_get_shutdown(b);
    case BIO_CTRL_SET_CLOSE:
        BIO_set_shutdown(b, (int)num);
        return 1;
    case BIO_CTRL_DGRAM_QUERY_MTU:
    case BIO_CTRL_DGRAM_GET_FALLBACK_MTU:
        return link->mtu;
    case BIO_CTRL_DGRAM_SET_MTU:
        link->mtu = num;
        return num;
    case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD:
        // The MTU given is the UDP payload size: no IP/UDP header to subtract.
        return 0;
    default:
        // Includes BIO_CTRL_DGRAM_SET_NEXT_TIMEOUT (no socket timeout to arm) and
        // BIO_CTRL_DGRAM_MTU_EXCEEDED (we never learn of ICMP errors).
        return 0;
    }
}

static int dgram_create(BIO *b) {
    swiftrtc_dgram_link *link = calloc(1, sizeof(swiftrtc_dgram_link));
    if (link == NULL) return 0;
    link->mtu = 1200;
    link->initial_timeout_us = 1000000;
    link->max_timeout_us = 60000000;
    BIO_set_data(b, link);
    BIO_set_init(b, 1);
    return 1;
}

static int dgram_destroy(BIO *b) {
    if (b == NULL) return 0;
    swiftrtc_dgram_link *link = BIO_get_data(b);
    if (link != NULL) {
        queue_clear(&link->incoming);
        queue_clear(&link->outgoing);
        free(link);
    }
    BIO_set_data(b, NULL);
    BIO_set_init(b, 0);
    return 1;
}

static BIO_METHOD *dgram_method = NULL;
static int dgram_type = 0;
static pthread_once_t dgram_method_once = PTHREAD_ONCE_INIT;

static void dgram_method_init(void) {
    int index = BIO_get_new_index();
    if (index < 0) return;
    dgram_type = index | BIO_TYPE_SOURCE_SINK;
    BIO_METHOD *m = BIO_meth_new(dgram_type, "swiftrtc datagram link");
    if (m == NULL) return;
    if (!BIO_meth_set_write(m, dgram_write) || !BIO_meth_set_read(m, dgram_read)
        || !BIO_meth_set_puts(m, dgram_puts) || !BIO_meth_set_ctrl(m, dgram_ctrl)
        || !BIO_meth_set_create(m, dgram_create) || !BIO_meth_set_destroy(m, dgram_destroy)) {
        BIO_meth_free(m);
        return;
    }
    dgram_method = m;  // lives for the process, like OpenSSL's own static methods
}

static swiftrtc_dgram_link *link_of(BIO *b) {
    if (b == NULL || dgram_method == NULL || BIO_method_type(b) != dgram_type) return NULL;
    return BIO_get_data(b);
}

struct bio_st *swiftrtc_dgram_bio_new(long mtu) {
    pthread_once(&dgram_method_once, dgram_method_init);
    if (dgram_method == NULL) return NULL;
    BIO *b = BIO_new(dgram_method);
    swiftrtc_dgram_link *link = link_of(b);
    if (link == NULL) {
        BIO_free(b);
        return NULL;
    }
    link->mtu = mtu;
    return b;
}

int swiftrtc_dgram_bio_push_incoming(struct bio_st *bio, const uint8_t *bytes, size_t length) {
    swiftrtc_dgram_link *link = link_of(bio);
    if (link == NULL || (bytes == NULL && length > 0)) return 0;
    return queue_push(&link->incoming, bytes, length);
}

void swiftrtc_dgram_bio_clear_incoming(struct bio_st *bio) {
    swiftrtc_dgram_link *link = link_of(bio);
    if (link != NULL) queue_clear(&link->incoming);
}

long swiftrtc_dgram_bio_next_outgoing_length(struct bio_st *bio) {
    swiftrtc_dgram_link *link = link_of(bio);
    if (link == NULL || link->outgoing.head == NULL) return -1;
    return (long)link->outgoing.head->length;
}

size_t swiftrtc_dgram_bio_pop_outgoing(struct bio_st *bio, uint8_t *buffer, size_t capacity) {
    swiftrtc_dgram_link *link = link_of(bio);
    if (link == NULL || link->outgoing.head == NULL) return 0;
    swiftrtc_datagram *d = link->outgoing.head;
    size_t n = d->length < capacity ? d->length : capacity;
    if (n > 0 && buffer != NULL) memcpy(buffer, d->bytes, n);
    size_t length = d->length;
    queue_drop_head(&link->outgoing);
    return length;
}

// OpenSSL calls this with 0 when a flight's timer starts and with the current timeout after
// each expiry; the result is the next timeout in microseconds.
static unsigned int retransmit_timer(SSL *s, unsigned int timer_us) {
    swiftrtc_dgram_link *link = link_of(SSL_get_rbio(s));
    unsigned int initial = link != NULL ? link->initial_timeout_us : 1000000;
    unsigned int max = link != NULL ? link->max_timeout_us : 60000000;
    if (timer_us == 0) return initial;
    return timer_us > max / 2 ? max : timer_us * 2;
}

void swiftrtc_dtls_set_retransmit_timer(struct ssl_st *ssl, unsigned int initial_us, unsigned int max_us) {
    swiftrtc_dgram_link *link = link_of(SSL_get_rbio(ssl));
    if (link != NULL) {
        link->initial_timeout_us = initial_us > 0 ? initial_us : 1;
        link->max_timeout_us = max_us >= link->initial_timeout_us ? max_us : link->initial_timeout_us;
    }
    DTLS_set_timer_cb(ssl, retransmit_timer);
}
