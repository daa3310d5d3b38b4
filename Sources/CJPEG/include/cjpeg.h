// libjpeg-turbo for Swift. libjpeg reports errors by longjmp out of its error manager, which
// must not cross Swift frames: these functions own the setjmp and return an error text instead.
#pragma once
#include <stddef.h>
#include <stdint.h>

enum {
    CJPEG_PIXELS_RGB = 0,    // 3 bytes per pixel: R, G, B
    CJPEG_PIXELS_BGRA = 1,   // 4 bytes per pixel: B, G, R, A (A ignored on encode, 255 on decode)
};

enum { CJPEG_ERROR_LENGTH = 200 };

/// Encodes `width`×`height` pixels (`stride` bytes per row) as a baseline JPEG with 4:2:0 chroma
/// and `quality` 1…100. On success returns 0 and a malloc'd buffer in *out (free it with
/// cjpeg_free) of *out_size bytes; on failure returns -1 with a message in `error`.
int cjpeg_encode(const uint8_t *pixels, int width, int height, int stride, int pixel_layout, int quality,
                 uint8_t **out, size_t *out_size, char error[CJPEG_ERROR_LENGTH]);

void cjpeg_free(void *p);

/// Reads the header of a JPEG in memory: 0 with *width, *height, *components set, or -1 with a
/// message.
int cjpeg_read_header(const uint8_t *data, size_t size, int *width, int *height, int *components,
                      char error[CJPEG_ERROR_LENGTH]);

/// Decodes a JPEG into `dst` (`width`×`height` as read from the header, `dst_stride` bytes per
/// row, `pixel_layout` as above). Corrupt data that libjpeg only warns about (truncated file,
/// bad Huffman code) is an error too: a frame with grey blocks is not a picture.
int cjpeg_decode(const uint8_t *data, size_t size, int pixel_layout, uint8_t *dst, int dst_stride,
                 int width, int height, char error[CJPEG_ERROR_LENGTH]);
