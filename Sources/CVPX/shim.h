#pragma once
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

// vpx_codec_enc_init / vpx_codec_dec_init are macros and vpx_codec_control is variadic:
// plain functions Swift can call.
static inline vpx_codec_err_t swiftrtc_vpx_vp8_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t swiftrtc_vpx_vp8_enc_config_default(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}
static inline vpx_codec_err_t swiftrtc_vpx_vp8_dec_init(vpx_codec_ctx_t *ctx, unsigned int threads) {
    vpx_codec_dec_cfg_t cfg = { threads, 0, 0 };
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), &cfg, 0);
}
static inline vpx_codec_err_t swiftrtc_vpx_control_int(vpx_codec_ctx_t *ctx, int id, int value) {
    return vpx_codec_control_(ctx, id, value);
}
static inline vpx_codec_err_t swiftrtc_vpx_control_int_ptr(vpx_codec_ctx_t *ctx, int id, int *value) {
    return vpx_codec_control_(ctx, id, value);
}
static const long swiftrtc_vpx_flag_force_kf = VPX_EFLAG_FORCE_KF;
static const unsigned long swiftrtc_vpx_dl_realtime = VPX_DL_REALTIME;
