#pragma once
#include <opus/opus.h>

// opus_encoder_ctl / opus_decoder_ctl are variadic and their requests are macros, neither of
// which Swift can call: one typed wrapper per request we use. Each returns OPUS_OK or an error.

static inline int copus_encoder_set_bitrate(OpusEncoder *st, opus_int32 bps) {
    return opus_encoder_ctl(st, OPUS_SET_BITRATE(bps));
}
static inline int copus_encoder_get_bitrate(OpusEncoder *st, opus_int32 *bps) {
    return opus_encoder_ctl(st, OPUS_GET_BITRATE(bps));
}
static inline int copus_encoder_set_complexity(OpusEncoder *st, int complexity) {
    return opus_encoder_ctl(st, OPUS_SET_COMPLEXITY(complexity));
}
static inline int copus_encoder_set_inband_fec(OpusEncoder *st, int enabled) {
    return opus_encoder_ctl(st, OPUS_SET_INBAND_FEC(enabled));
}
static inline int copus_encoder_set_packet_loss_perc(OpusEncoder *st, int percent) {
    return opus_encoder_ctl(st, OPUS_SET_PACKET_LOSS_PERC(percent));
}
static inline int copus_encoder_set_dtx(OpusEncoder *st, int enabled) {
    return opus_encoder_ctl(st, OPUS_SET_DTX(enabled));
}
static inline int copus_encoder_set_vbr(OpusEncoder *st, int enabled) {
    return opus_encoder_ctl(st, OPUS_SET_VBR(enabled));
}
static inline int copus_encoder_set_signal(OpusEncoder *st, int signal) {
    return opus_encoder_ctl(st, OPUS_SET_SIGNAL(signal));
}
static inline int copus_encoder_get_lookahead(OpusEncoder *st, opus_int32 *samples) {
    return opus_encoder_ctl(st, OPUS_GET_LOOKAHEAD(samples));
}
static inline int copus_encoder_get_in_dtx(OpusEncoder *st, opus_int32 *in_dtx) {
    return opus_encoder_ctl(st, OPUS_GET_IN_DTX(in_dtx));
}
static inline int copus_encoder_reset(OpusEncoder *st) {
    return opus_encoder_ctl(st, OPUS_RESET_STATE);
}
static inline int copus_decoder_reset(OpusDecoder *st) {
    return opus_decoder_ctl(st, OPUS_RESET_STATE);
}
static inline int copus_decoder_get_last_packet_duration(OpusDecoder *st, opus_int32 *samples) {
    return opus_decoder_ctl(st, OPUS_GET_LAST_PACKET_DURATION(samples));
}
