// usrsctp 0.9.5 in AF_CONN mode, driven without its threads. The socket options, the
// flexible-array stream reset and the sendv/recvv info structs are easier to get right in C.
#pragma once
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <usrsctp.h>

typedef int (*swiftrtc_sctp_output_fn)(void *addr, void *buffer, size_t length, uint8_t tos, uint8_t set_df);

/// Process-wide set-up (call once): no timer or receive threads (the caller drives time with
/// usrsctp_handle_timers), no debug printer, no ECN (WebRTC peers do not use it).
static inline void swiftrtc_sctp_init(swiftrtc_sctp_output_fn output) {
    usrsctp_init_nothreads(0, output, NULL);
    usrsctp_sysctl_set_sctp_ecn_enable(0);
    usrsctp_sysctl_set_sctp_pr_enable(1);
    usrsctp_sysctl_set_sctp_reconfig_enable(1);
    // Like libwebrtc: a DTLS link that is up answers fast; do not wait 3 s to retransmit.
    usrsctp_sysctl_set_sctp_rto_initial_default(1000);
    usrsctp_sysctl_set_sctp_rto_min_default(400);
    usrsctp_sysctl_set_sctp_rto_max_default(10000);
    usrsctp_sysctl_set_sctp_init_rtx_max_default(10);
    usrsctp_sysctl_set_sctp_max_chunks_on_queue(4096);
}

static inline struct sockaddr_conn swiftrtc_sctp_address(void *transport, uint16_t port) {
    struct sockaddr_conn sconn;
    memset(&sconn, 0, sizeof sconn);
    sconn.sconn_family = AF_CONN;
    sconn.sconn_port = htons(port);
    sconn.sconn_addr = transport;
    return sconn;
}

/// One-to-one socket for one association whose packets go to `transport` (the registered
/// address that conn_output receives). Connects at once (simultaneous open, as WebRTC does).
/// Returns NULL and sets *error to a step number * 1000 + errno on failure.
static inline struct socket *swiftrtc_sctp_open(void *transport, uint16_t local_port, uint16_t remote_port,
                                                uint16_t streams, uint32_t buffer_size, uint32_t mtu, int *error) {
    *error = 0;
    usrsctp_register_address(transport);
    struct socket *s = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, NULL, NULL, 0, NULL);
    if (s == NULL) { *error = 1000 + errno; usrsctp_deregister_address(transport); return NULL; }
    int step = 2;
    int on = 1;
    struct linger linger_opt = { .l_onoff = 1, .l_linger = 0 };
    struct sctp_assoc_value reset = { .assoc_id = SCTP_ALL_ASSOC, .assoc_value = SCTP_ENABLE_RESET_STREAM_REQ };
    struct sctp_initmsg init;
    memset(&init, 0, sizeof init);
    init.sinit_num_ostreams = streams;
    init.sinit_max_instreams = streams;
    int size = (int)buffer_size;
    if (usrsctp_set_non_blocking(s, 1) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, SOL_SOCKET, SO_LINGER, &linger_opt, sizeof linger_opt) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_ENABLE_STREAM_RESET, &reset, sizeof reset) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_EXPLICIT_EOR, &on, sizeof on) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_INITMSG, &init, sizeof init) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, SOL_SOCKET, SO_SNDBUF, &size, sizeof size) < 0) goto fail;
    step++; if (usrsctp_setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) < 0) goto fail;
    step++;
    uint16_t events[] = { SCTP_ASSOC_CHANGE, SCTP_STREAM_RESET_EVENT, SCTP_SEND_FAILED_EVENT, SCTP_STREAM_CHANGE_EVENT };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        struct sctp_event event = { .se_assoc_id = SCTP_ALL_ASSOC, .se_type = events[i], .se_on = 1 };
        if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_EVENT, &event, sizeof event) < 0) goto fail;
    }
    step++;
    struct sockaddr_conn local = swiftrtc_sctp_address(transport, local_port);
    if (usrsctp_bind(s, (struct sockaddr *)&local, sizeof local) < 0) goto fail;
    step++;
    struct sockaddr_conn remote = swiftrtc_sctp_address(transport, remote_port);
    if (usrsctp_connect(s, (struct sockaddr *)&remote, sizeof remote) < 0 && errno != EINPROGRESS) goto fail;
    step++;
    // DTLS carries the packets: a fixed MTU instead of path MTU discovery.
    struct sctp_paddrparams params;
    memset(&params, 0, sizeof params);
    memcpy(&params.spp_address, &remote, sizeof remote);
    params.spp_flags = SPP_PMTUD_DISABLE;
    params.spp_pathmtu = mtu;
    if (usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &params, sizeof params) < 0) goto fail;
    return s;
fail:
    *error = step * 1000 + errno;
    usrsctp_close(s);
    usrsctp_deregister_address(transport);
    return NULL;
}

/// Sends (part of) a message; `end` marks its last byte (explicit EOR mode). `policy`:
/// 0 reliable, SCTP_PR_SCTP_RTX or SCTP_PR_SCTP_TTL with `value`. Returns the bytes taken or
/// -1 with errno (EWOULDBLOCK: the send buffer is full).
static inline ssize_t swiftrtc_sctp_send(struct socket *s, const void *data, size_t length, uint16_t sid, uint32_t ppid,
                                         int unordered, uint16_t policy, uint32_t value, int end) {
    struct sctp_sendv_spa spa;
    memset(&spa, 0, sizeof spa);
    spa.sendv_flags = SCTP_SEND_SNDINFO_VALID;
    spa.sendv_sndinfo.snd_sid = sid;
    spa.sendv_sndinfo.snd_ppid = htonl(ppid);
    spa.sendv_sndinfo.snd_flags = (unordered ? SCTP_UNORDERED : 0) | (end ? SCTP_EOR : 0);
    if (policy != 0) {
        spa.sendv_flags |= SCTP_SEND_PRINFO_VALID;
        spa.sendv_prinfo.pr_policy = policy;
        spa.sendv_prinfo.pr_value = value;
    }
    return usrsctp_sendv(s, data, length, NULL, 0, &spa, sizeof spa, SCTP_SENDV_SPA, 0);
}

/// Reads what is ready (data or a notification). Returns the length, 0 when the peer shut
/// down, -1 with errno (EWOULDBLOCK: nothing ready).
static inline ssize_t swiftrtc_sctp_receive(struct socket *s, void *buffer, size_t capacity, uint16_t *sid, uint32_t *ppid,
                                            int *flags) {
    struct sctp_rcvinfo info;
    memset(&info, 0, sizeof info);
    socklen_t info_length = sizeof info;
    unsigned int info_type = 0;
    struct sockaddr_conn from;
    socklen_t from_length = sizeof from;
    *flags = 0;
    ssize_t n = usrsctp_recvv(s, buffer, capacity, (struct sockaddr *)&from, &from_length, &info, &info_length,
                              &info_type, flags);
    if (n > 0 && info_type == SCTP_RECVV_RCVINFO) {
        *sid = info.rcv_sid;
        *ppid = ntohl(info.rcv_ppid);
    } else {
        *sid = 0;
        *ppid = 0;
    }
    return n;
}

/// RFC 8831 §6.7: resets our outgoing side of `count` streams. Returns 0 or an errno.
static inline int swiftrtc_sctp_reset_streams(struct socket *s, const uint16_t *sids, uint16_t count) {
    size_t size = sizeof(struct sctp_reset_streams) + count * sizeof(uint16_t);
    struct sctp_reset_streams *reset = calloc(1, size);
    if (reset == NULL) return ENOMEM;
    reset->srs_assoc_id = SCTP_ALL_ASSOC;
    reset->srs_flags = SCTP_STREAM_RESET_OUTGOING;
    reset->srs_number_streams = count;
    memcpy(reset->srs_stream_list, sids, count * sizeof(uint16_t));
    int rc = usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_RESET_STREAMS, reset, (socklen_t)size);
    int saved = errno;
    free(reset);
    return rc < 0 ? saved : 0;
}

static inline void swiftrtc_sctp_close(struct socket *s, void *transport) {
    usrsctp_close(s);
    usrsctp_deregister_address(transport);
}

static inline int swiftrtc_errno(void) { return errno; }

/// recvv flags Swift cannot import from the socket headers' enum.
enum { SWIFTRTC_MSG_EOR = MSG_EOR, SWIFTRTC_MSG_NOTIFICATION = MSG_NOTIFICATION };
