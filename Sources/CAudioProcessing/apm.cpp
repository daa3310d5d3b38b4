// C API over webrtc::AudioProcessing (webrtc-audio-processing 0.3, Debian), float StreamConfig
// interface only: the int16 AudioFrame interface pulls in a header Debian does not ship.
#include "CAudioProcessing.h"
#include <webrtc/modules/audio_processing/include/audio_processing.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace {

constexpr int kMaxChannels = 2;

// Deinterleaved scratch for one direction (capture or render), guarded by its own mutex.
struct Direction {
    std::mutex lock;
    std::vector<float> planes[kMaxChannels];
    float *pointers[kMaxChannels] = {nullptr, nullptr};

    void reserve(size_t frames) {
        for (int c = 0; c < kMaxChannels; ++c) {
            if (planes[c].size() < frames) planes[c].resize(frames);
            pointers[c] = planes[c].data();
        }
    }
};

inline float s16ToFloat(int16_t v) { return static_cast<float>(v) * (1.0f / 32768.0f); }
inline int16_t floatToS16(float v) {
    float scaled = v * 32768.0f;
    if (scaled >= 32767.0f) return 32767;
    if (scaled <= -32768.0f) return -32768;
    // Round to nearest so an int16 round trip through float is exact.
    return static_cast<int16_t>(scaled >= 0 ? scaled + 0.5f : scaled - 0.5f);
}

bool validLayout(size_t frames, int rate, int channels, size_t *chunk) {
    if (rate < 8000 || rate > 48000 || rate % 100 != 0) return false;
    if (channels < 1 || channels > kMaxChannels) return false;
    *chunk = static_cast<size_t>(rate / 100);
    return frames > 0 && frames % *chunk == 0;
}

}  // namespace

struct capm {
    std::unique_ptr<webrtc::AudioProcessing> apm;
    std::atomic<unsigned> components{0};
    std::atomic<int> delayMs{0};
    Direction capture;
    Direction render;
};

namespace {

// Runs one direction over `frames` samples per channel in 10 ms chunks. `load` fills the planes
// for a chunk, `store` (capture only) writes them back.
template <typename Load, typename Store>
int processChunks(capm *apm, Direction &dir, bool capture, size_t frames, int rate,
                  int channels, Load load, Store store) {
    size_t chunk = 0;
    if (!validLayout(frames, rate, channels, &chunk)) return webrtc::AudioProcessing::kBadDataLengthError;
    std::lock_guard<std::mutex> guard(dir.lock);
    dir.reserve(chunk);
    webrtc::StreamConfig config(rate, channels);
    webrtc::AudioProcessing *p = apm->apm.get();
    for (size_t start = 0; start < frames; start += chunk) {
        load(dir.pointers, start, chunk);
        int result;
        if (capture) {
            // The echo canceller requires a delay before every capture chunk.
            if (p->echo_cancellation()->is_enabled()) p->set_stream_delay_ms(apm->delayMs.load());
            result = p->ProcessStream(dir.pointers, config, config, dir.pointers);
        } else {
            result = p->ProcessReverseStream(dir.pointers, config, config, dir.pointers);
        }
        // A warning (bad stream parameter, e.g. an out-of-range delay) still processed the chunk.
        if (result != webrtc::AudioProcessing::kNoError &&
            result != webrtc::AudioProcessing::kBadStreamParameterWarning) {
            return result;
        }
        store(dir.pointers, start, chunk);
    }
    return 0;
}

}  // namespace

extern "C" {

capm *capm_create(int sample_rate_hz, int channels) {
    size_t chunk = 0;
    if (!validLayout(static_cast<size_t>(sample_rate_hz / 100), sample_rate_hz, channels, &chunk)) return nullptr;
    webrtc::Config config;
    // What Chromium configured for desktop AEC: the extended filter copes with longer echo paths
    // and delay-agnostic mode estimates the delay itself when the reported one is off.
    config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
    config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(true));
    // The experimental AGC drives an analog microphone volume we do not have; digital AGC only.
    config.Set<webrtc::ExperimentalAgc>(new webrtc::ExperimentalAgc(false));
    webrtc::AudioProcessing *raw = webrtc::AudioProcessing::Create(config);
    if (raw == nullptr) return nullptr;
    capm *handle = new (std::nothrow) capm();
    if (handle == nullptr) {
        delete raw;
        return nullptr;
    }
    handle->apm.reset(raw);
    webrtc::StreamConfig stream(sample_rate_hz, channels);
    webrtc::ProcessingConfig processing;
    processing.input_stream() = stream;
    processing.output_stream() = stream;
    processing.reverse_input_stream() = stream;
    processing.reverse_output_stream() = stream;
    if (raw->Initialize(processing) != webrtc::AudioProcessing::kNoError) {
        delete handle;
        return nullptr;
    }
    // Settings for each component; enabling happens in capm_set_components.
    // Moderate (libwebrtc's default) removed as much echo as high in our tests and keeps more of
    // the near-end talker during double talk.
    raw->echo_cancellation()->set_suppression_level(webrtc::EchoCancellation::kModerateSuppression);
    raw->echo_cancellation()->enable_drift_compensation(false);
    raw->echo_cancellation()->enable_metrics(true);
    raw->echo_cancellation()->enable_delay_logging(true);
    raw->gain_control()->set_mode(webrtc::GainControl::kAdaptiveDigital);
    raw->gain_control()->set_target_level_dbfs(3);
    raw->gain_control()->set_compression_gain_db(9);
    raw->gain_control()->enable_limiter(true);
    raw->noise_suppression()->set_level(webrtc::NoiseSuppression::kHigh);
    handle->capture.reserve(static_cast<size_t>(chunk));
    handle->render.reserve(static_cast<size_t>(chunk));
    return handle;
}

void capm_destroy(capm *apm) { delete apm; }

int capm_set_components(capm *apm, unsigned components) {
    webrtc::AudioProcessing *p = apm->apm.get();
    int results[] = {
        p->echo_cancellation()->Enable((components & CAPM_ECHO_CANCELLATION) != 0),
        p->gain_control()->Enable((components & CAPM_AUTO_GAIN_CONTROL) != 0),
        p->noise_suppression()->Enable((components & CAPM_NOISE_SUPPRESSION) != 0),
        p->high_pass_filter()->Enable((components & CAPM_HIGH_PASS_FILTER) != 0),
        p->voice_detection()->Enable(components != 0),
    };
    apm->components.store(components);
    for (int r : results) {
        if (r != webrtc::AudioProcessing::kNoError) return r;
    }
    return 0;
}

void capm_set_stream_delay_ms(capm *apm, int delay_ms) { apm->delayMs.store(delay_ms); }

int capm_process_capture_f32(capm *apm, const float *in, float *out, size_t frames, int sample_rate_hz,
                             int channels) {
    if (apm->components.load() == 0) {
        // Everything off: the output is the input, bit for bit.
        if (in != out) std::copy(in, in + frames * static_cast<size_t>(channels), out);
        return 0;
    }
    const size_t ch = static_cast<size_t>(channels);
    int result = processChunks(
        apm, apm->capture, true, frames, sample_rate_hz, channels,
        [&](float *const *planes, size_t start, size_t n) {
            for (size_t i = 0; i < n; ++i)
                for (size_t c = 0; c < ch; ++c) planes[c][i] = in[(start + i) * ch + c];
        },
        [&](float *const *planes, size_t start, size_t n) {
            for (size_t i = 0; i < n; ++i)
                for (size_t c = 0; c < ch; ++c) out[(start + i) * ch + c] = planes[c][i];
        });
    return result;
}

int capm_process_capture_s16(capm *apm, const int16_t *in, int16_t *out, size_t frames, int sample_rate_hz,
                             int channels) {
    if (apm->components.load() == 0) {
        if (in != out) std::copy(in, in + frames * static_cast<size_t>(channels), out);
        return 0;
    }
    const size_t ch = static_cast<size_t>(channels);
    return processChunks(
        apm, apm->capture, true, frames, sample_rate_hz, channels,
        [&](float *const *planes, size_t start, size_t n) {
            for (size_t i = 0; i < n; ++i)
                for (size_t c = 0; c < ch; ++c) planes[c][i] = s16ToFloat(in[(start + i) * ch + c]);
        },
        [&](float *const *planes, size_t start, size_t n) {
            for (size_t i = 0; i < n; ++i)
                for (size_t c = 0; c < ch; ++c) out[(start + i) * ch + c] = floatToS16(planes[c][i]);
        });
}

int capm_process_render_f32(capm *apm, const float *in, size_t frames, int sample_rate_hz, int channels) {
    // Only the echo canceller (and, as a hint, the gain control) uses the far end.
    if ((apm->components.load() & (CAPM_ECHO_CANCELLATION | CAPM_AUTO_GAIN_CONTROL)) == 0) return 0;
    const size_t ch = static_cast<size_t>(channels);
    return processChunks(
        apm, apm->render, false, frames, sample_rate_hz, channels,
        [&](float *const *planes, size_t start, size_t n) {
            for (size_t i = 0; i < n; ++i)
                for (size_t c = 0; c < ch; ++c) planes[c][i] = in[(start + i) * ch + c];
        },
        [](float *const *, size_t, size_t) {});
}

int capm_process_render_s16(capm *apm, const int16_t *in, size_t frames, int sample_rate_hz, int channels) {
    if ((apm->components.load() & (CAPM_ECHO_CANCELLATION | CAPM_AUTO_GAIN_CONTROL)) == 0) return 0;
    const size_t ch = static_cast<size_t>(channels);
    return processChunks(
        apm, apm->render, false, frames, sample_rate_hz, channels,
        [&](float *const *planes, size_t start, size_t n) {
            for (size_t i = 0; i < n; ++i)
                for (size_t c = 0; c < ch; ++c) planes[c][i] = s16ToFloat(in[(start + i) * ch + c]);
        },
        [](float *const *, size_t, size_t) {});
}

int capm_stream_has_echo(capm *apm) {
    return apm->apm->echo_cancellation()->stream_has_echo() ? 1 : 0;
}

int capm_stream_has_voice(capm *apm) {
    return apm->apm->voice_detection()->stream_has_voice() ? 1 : 0;
}

int capm_echo_delay_median_ms(capm *apm) {
    int median = -1, deviation = -1;
    if (apm->apm->echo_cancellation()->GetDelayMetrics(&median, &deviation) != webrtc::AudioProcessing::kNoError)
        return -1;
    return median;
}

const char *capm_error_string(int code) {
    switch (code) {
    case 0: return "no error";
    case webrtc::AudioProcessing::kUnspecifiedError: return "unspecified error";
    case webrtc::AudioProcessing::kCreationFailedError: return "creation failed";
    case webrtc::AudioProcessing::kUnsupportedComponentError: return "unsupported component";
    case webrtc::AudioProcessing::kUnsupportedFunctionError: return "unsupported function";
    case webrtc::AudioProcessing::kNullPointerError: return "null pointer";
    case webrtc::AudioProcessing::kBadParameterError: return "bad parameter";
    case webrtc::AudioProcessing::kBadSampleRateError: return "bad sample rate";
    case webrtc::AudioProcessing::kBadDataLengthError: return "bad data length (not a whole number of 10 ms chunks, or unsupported rate/channels)";
    case webrtc::AudioProcessing::kBadNumberChannelsError: return "bad number of channels";
    case webrtc::AudioProcessing::kFileError: return "file error";
    case webrtc::AudioProcessing::kStreamParameterNotSetError: return "stream parameter not set";
    case webrtc::AudioProcessing::kNotEnabledError: return "component not enabled";
    case webrtc::AudioProcessing::kBadStreamParameterWarning: return "stream parameter out of range";
    default: return "unknown error";
    }
}

}  // extern "C"
