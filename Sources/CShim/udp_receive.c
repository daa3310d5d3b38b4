// Datagram receive with the kernel's receive time (see CShim.h). CMSG_* are macros Swift cannot
// call; SO_TIMESTAMPNS is Linux's (elsewhere: no time, the caller uses its own clock).
#define _GNU_SOURCE
#include "CShim.h"
#include <string.h>
#include <sys/socket.h>
#include <time.h>

int swiftrtc_enable_receive_timestamps(int fd) {
#ifdef SO_TIMESTAMPNS
    int on = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
#else
    (void)fd;
    return -1;
#endif
}

long swiftrtc_recv_timestamped(int fd, void *buffer, size_t capacity, void *name, uint32_t *name_length,
                               int64_t *realtime_ns) {
    struct iovec vector = {buffer, capacity};
    union {
        char bytes[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } control;
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_name = name;
    message.msg_namelen = *name_length;
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    *realtime_ns = 0;
    ssize_t n = recvmsg(fd, &message, MSG_DONTWAIT);
    if (n < 0) return -1;
    *name_length = message.msg_namelen;
#ifdef SO_TIMESTAMPNS
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *realtime_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        }
    }
#endif
    return (long)n;
}
