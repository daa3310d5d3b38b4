// Batched UDP sends (see CShim.h). sendmmsg and struct mmsghdr need _GNU_SOURCE, which Swift's
// Glibc module does not define.
#define _GNU_SOURCE
#include "CShim.h"
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

int swiftrtc_send_datagrams(int fd, void *const *buffers, const size_t *lengths, const void *names, size_t name_stride,
                            const uint32_t *name_lengths, unsigned int count, unsigned int *failed) {
    enum { chunk = 64 };
    struct mmsghdr messages[chunk];
    struct iovec vectors[chunk];
    unsigned int sent = 0, lost = 0, i = 0;
    while (i < count) {
        unsigned int n = count - i < chunk ? count - i : chunk;
        memset(messages, 0, sizeof(struct mmsghdr) * n);
        for (unsigned int k = 0; k < n; k++) {
            vectors[k].iov_base = buffers[i + k];
            vectors[k].iov_len = lengths[i + k];
            messages[k].msg_hdr.msg_iov = &vectors[k];
            messages[k].msg_hdr.msg_iovlen = 1;
            messages[k].msg_hdr.msg_name = (void *)((const char *)names + (i + k) * name_stride);
            messages[k].msg_hdr.msg_namelen = name_lengths[i + k];
        }
        unsigned int done = 0;
        while (done < n) {
            int r = sendmmsg(fd, messages + done, n - done, MSG_DONTWAIT);
            if (r < 0) {
                if (errno == EINTR) continue;
                lost++;      // the first of the rest failed: drop it, go on with the others
                done++;
                continue;
            }
            done += (unsigned int)r;
            sent += (unsigned int)r;
        }
        i += n;
    }
    *failed = lost;
    return (int)sent;
}
