// The test binary's gettimeofday: the real wall clock plus an offset tests can advance, so a
// library that reads gettimeofday for its timers (OpenSSL 3.0's DTLS retransmission) can be
// stepped like a fake clock instead of waited for. The executable's definition takes the place
// of libc's for every library in the process (ELF symbol interposition; ThreadSanitizer's own
// interceptor is weak). At offset 0 it is the real clock.
#include <stdatomic.h>
#include <stddef.h>
#include <sys/time.h>
#include <time.h>
#include "CWallClock.h"

static _Atomic long long offset_us = 0;

void swiftrtc_test_wall_clock_advance(long long microseconds) { atomic_fetch_add(&offset_us, microseconds); }

void swiftrtc_test_wall_clock_reset(void) { atomic_store(&offset_us, 0); }

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return -1;
    long long us = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000 + atomic_load(&offset_us);
    if (tv != NULL) {
        tv->tv_sec = us / 1000000;
        tv->tv_usec = us % 1000000;
    }
    return 0;
}
