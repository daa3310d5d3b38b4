// libyuv's plain-C headers (libyuv.h itself pulls C++-only pieces). No pkg-config file exists.
#pragma once
#include <libyuv/convert.h>
#include <libyuv/convert_argb.h>
#include <libyuv/convert_from.h>
#include <libyuv/convert_from_argb.h>
#include <libyuv/planar_functions.h>
#include <libyuv/rotate.h>
#include <libyuv/rotate_argb.h>
#include <libyuv/scale.h>
#include <libyuv/scale_argb.h>

// Full-range (JPEG, BT.601) NV12 to BGRA-in-memory ("ARGB" in libyuv's little-endian naming).
// Wrapped because the matrix is an extern struct whose address Swift cannot take without copying
// it (libyuv's SIMD rows may rely on its alignment).
static inline int cyuv_nv12_full_range_to_argb(const uint8_t* src_y, int src_stride_y,
                                               const uint8_t* src_uv, int src_stride_uv,
                                               uint8_t* dst_argb, int dst_stride_argb,
                                               int width, int height) {
    return NV12ToARGBMatrix(src_y, src_stride_y, src_uv, src_stride_uv, dst_argb, dst_stride_argb,
                            &kYuvJPEGConstants, width, height);
}
