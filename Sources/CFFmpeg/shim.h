#pragma once
#include <errno.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

// Shared by Codecs and Capture: add wrappers, do not remove ones others may use.
// AVERROR and the FFERRTAG codes are macros Swift cannot import.
static inline int swiftrtc_averror(int posixError) { return AVERROR(posixError); }
static inline int swiftrtc_averror_eof(void) { return AVERROR_EOF; }
static inline int swiftrtc_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int swiftrtc_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int swiftrtc_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int64_t swiftrtc_av_nopts_value(void) { return AV_NOPTS_VALUE; }
