#define _GNU_SOURCE
#include "cv4l2.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int cv4l2_open(const char *path) {
    int fd;
    do { fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC); } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

int cv4l2_close(int fd) {
    // Linux closes the fd even when close reports EINTR: never retry.
    return close(fd) < 0 ? -errno : 0;
}

int cv4l2_ioctl(int fd, unsigned long request, void *arg) {
    int r;
    do { r = ioctl(fd, request, arg); } while (r < 0 && errno == EINTR);
    return r < 0 ? -errno : r;
}

void *cv4l2_mmap(int fd, size_t length, int64_t offset, int *error) {
    void *p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
    if (p == MAP_FAILED) {
        if (error) *error = -errno;
        return NULL;
    }
    if (error) *error = 0;
    return p;
}

int cv4l2_munmap(void *address, size_t length) {
    return munmap(address, length) < 0 ? -errno : 0;
}

int cv4l2_poll(int fd, int wake_fd, int timeout_ms) {
    struct pollfd fds[2];
    nfds_t n = 1;
    fds[0].fd = fd;
    fds[0].events = POLLIN;
    fds[0].revents = 0;
    if (wake_fd >= 0) {
        fds[1].fd = wake_fd;
        fds[1].events = POLLIN;
        fds[1].revents = 0;
        n = 2;
    }
    int r;
    do { r = poll(fds, n, timeout_ms); } while (r < 0 && errno == EINTR);
    if (r < 0) return -errno;
    int bits = 0;
    if (fds[0].revents & POLLIN) bits |= 1;
    if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) bits |= 2;
    if (n == 2 && (fds[1].revents & POLLIN)) bits |= 4;
    return bits;
}

int cv4l2_eventfd(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int cv4l2_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t r;
    do { r = write(fd, &one, sizeof one); } while (r < 0 && errno == EINTR);
    // EAGAIN: the counter is already non-zero, which is all a wake needs.
    return (r < 0 && errno != EAGAIN) ? -errno : 0;
}

int cv4l2_eventfd_drain(int fd) {
    uint64_t value;
    ssize_t r;
    do { r = read(fd, &value, sizeof value); } while (r < 0 && errno == EINTR);
    return (r < 0 && errno != EAGAIN) ? -errno : 0;
}

int64_t cv4l2_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void cv4l2_strerror(int error, char *buffer, size_t length) {
    if (length == 0) return;
    // GNU strerror_r may return a static string instead of filling the buffer.
    const char *s = strerror_r(error, buffer, length);
    if (s != buffer) {
        strncpy(buffer, s, length - 1);
        buffer[length - 1] = 0;
    }
}
