// Small C helpers for what Swift cannot express directly (callbacks with state, macros).
#pragma once
#include <stddef.h>
#include <stdint.h>

// ---- DTLS datagram link (dtls_bio.c) ----
// A BIO for DTLS that keeps datagram boundaries in both directions: each BIO_write by OpenSSL
// becomes one outgoing datagram, each BIO_read returns exactly one incoming datagram. It reports
// a fixed MTU (no per-packet overhead: the MTU is the UDP payload size). OpenSSL types are
// declared opaquely so this header does not pull OpenSSL's headers into a second module.
struct bio_st;
struct ssl_st;

/// A new datagram BIO (refcount 1) whose link MTU is `mtu` bytes, or NULL when out of memory.
struct bio_st *_Nullable swiftrtc_dgram_bio_new(long mtu);
/// Queues one incoming datagram for OpenSSL to read. Returns 1, or 0 when out of memory or the
/// queue is full (the datagram is then dropped, as a full socket buffer would).
int swiftrtc_dgram_bio_push_incoming(struct bio_st *_Nonnull bio, const uint8_t *_Nullable bytes, size_t length);
/// Drops every queued incoming datagram (after OpenSSL has taken what it wanted).
void swiftrtc_dgram_bio_clear_incoming(struct bio_st *_Nonnull bio);
/// Length of the oldest outgoing datagram, or -1 when there is none.
long swiftrtc_dgram_bio_next_outgoing_length(struct bio_st *_Nonnull bio);
/// Copies the oldest outgoing datagram into `buffer` (at most `capacity` bytes), removes it and
/// returns its length; 0 when there is none.
size_t swiftrtc_dgram_bio_pop_outgoing(struct bio_st *_Nonnull bio, uint8_t *_Nullable buffer, size_t capacity);
/// Installs a DTLS retransmission timer on `ssl` (whose read BIO must be a datagram BIO from
/// swiftrtc_dgram_bio_new): the first flight waits `initial_us`, each retransmission doubles
/// the wait up to `max_us`.
void swiftrtc_dtls_set_retransmit_timer(struct ssl_st *_Nonnull ssl, unsigned int initial_us, unsigned int max_us);

// ---- heap ----
/// malloc_trim(0) (glibc; <malloc.h> is not in Swift's Glibc module): gives free heap pages back
/// to the OS. Returns 1 if memory was released. A no-op returning 0 elsewhere.
int swiftrtc_release_free_heap(void);

// ---- batched UDP sends (udp_batch.c) ----
/// Sends `count` datagrams on the UDP socket `fd` with sendmmsg(2) (Linux; one sendto each
/// elsewhere): datagram i is `lengths[i]` bytes at `buffers[i]` to the address in `names[i]`
/// (`name_lengths[i]` bytes). A datagram the kernel refuses (EAGAIN, ENOBUFS, ...) is skipped,
/// as UDP is best effort. Returns how many were sent; `*failed` gets how many were not.
int swiftrtc_send_datagrams(int fd, void *_Nullable const *_Nonnull buffers, const size_t *_Nonnull lengths,
                            const void *_Nonnull names, size_t name_stride, const uint32_t *_Nonnull name_lengths,
                            unsigned int count, unsigned int *_Nonnull failed);

// ---- timestamped UDP receive (udp_receive.c) ----
/// Asks the kernel to stamp each datagram `fd` receives with its arrival time (SO_TIMESTAMPNS).
/// Returns 0, or -1 where that is not available.
int swiftrtc_enable_receive_timestamps(int fd);
/// Receives one datagram (non-blocking) into `buffer`; the sender's address goes to `name`
/// (`*name_length` bytes in, the address's length out) and the kernel's receive time, on
/// CLOCK_REALTIME in ns, to `*realtime_ns` (0 when the datagram carries none). Returns the
/// datagram's length, or -1 (errno set) when nothing is waiting.
long swiftrtc_recv_timestamped(int fd, void *_Nonnull buffer, size_t capacity, void *_Nonnull name,
                               uint32_t *_Nonnull name_length, int64_t *_Nonnull realtime_ns);

// ---- Prefetch ----
/// Asks the CPU to bring `lines` cache lines from `p` on (for writing) into cache, without
/// waiting: a loop over many cold objects (the relay's fan-out: one player's session, engine and
/// cipher state each) prefetches the next item's memory while it works on this one.
static inline void swiftrtc_prefetch(const void *_Nullable p, size_t lines) {
    if (!p) return;
    for (size_t i = 0; i < lines; i++) __builtin_prefetch((const char *)p + 64 * i, 1, 3);
}
