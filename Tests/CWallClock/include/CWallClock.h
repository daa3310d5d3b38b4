#ifndef SWIFTRTC_TEST_WALL_CLOCK_H
#define SWIFTRTC_TEST_WALL_CLOCK_H

/// Moves the wall clock that gettimeofday reports in this test process forward by `microseconds`
/// (OpenSSL 3.0's DTLS retransmission timer reads it and offers no clock hook of its own).
void swiftrtc_test_wall_clock_advance(long long microseconds);

/// Back to the real wall clock.
void swiftrtc_test_wall_clock_reset(void);

#endif
