// C API over webrtc-audio-processing 0.3 (C++), so Swift can call it without C++ interop.
// One handle wraps one webrtc::AudioProcessing. Capture and render may run on two threads at
// once; each direction is serialized inside the shim.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct capm capm;

/// Components, as bits for capm_set_components.
enum {
    CAPM_ECHO_CANCELLATION = 1 << 0,
    CAPM_AUTO_GAIN_CONTROL = 1 << 1,
    CAPM_NOISE_SUPPRESSION = 1 << 2,
    CAPM_HIGH_PASS_FILTER = 1 << 3,
    /// Voice activity detection alone (it also runs whenever another component is on).
    CAPM_VOICE_DETECTION = 1 << 4,
};

/// Creates a processor for `sample_rate_hz` (8000, 16000, 32000 or 48000) and 1 or 2 channels,
/// all components off. Returns NULL on failure.
capm *capm_create(int sample_rate_hz, int channels);
void capm_destroy(capm *apm);

/// Turns components on or off (CAPM_* bits); takes effect with the next 10 ms chunk.
/// Returns 0 or a webrtc::AudioProcessing error code (< 0).
int capm_set_components(capm *apm, unsigned components);

/// Delay in ms between a far-end chunk passed to capm_process_render_* and the capture chunk that
/// holds its echo. Applied to every following capture chunk.
void capm_set_stream_delay_ms(capm *apm, int delay_ms);

/// Near-end (microphone) audio, interleaved, `frames` samples per channel (a multiple of 10 ms at
/// `sample_rate_hz`), processed in place from `in` into `out` (they may be the same buffer).
/// Float samples are in [-1, 1]. Returns 0 or an error code (< 0); after an error `out` is unspecified.
int capm_process_capture_f32(capm *apm, const float *in, float *out, size_t frames,
                             int sample_rate_hz, int channels);
int capm_process_capture_s16(capm *apm, const int16_t *in, int16_t *out, size_t frames,
                             int sample_rate_hz, int channels);

/// Far-end (loudspeaker) audio, the echo reference; same layout rules as capture.
int capm_process_render_f32(capm *apm, const float *in, size_t frames, int sample_rate_hz, int channels);
int capm_process_render_s16(capm *apm, const int16_t *in, size_t frames, int sample_rate_hz, int channels);

/// Echo canceller state after the last capture chunk: 1 if the chunk might contain echo.
int capm_stream_has_echo(capm *apm);
/// Voice activity detection after the last capture chunk (runs whenever any component does):
/// 1 if it held speech.
int capm_stream_has_voice(capm *apm);
/// Estimated delay (ms) between render and capture as the echo canceller sees it, or -1 when
/// it has no estimate yet.
int capm_echo_delay_median_ms(capm *apm);

/// A short English description of an error code from this API.
const char *capm_error_string(int code);

#ifdef __cplusplus
}
#endif
