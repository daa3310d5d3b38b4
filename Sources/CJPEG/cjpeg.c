#include "cjpeg.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;        // where the first error or warning text goes
    int warned;           // set once libjpeg warned about corrupt data
} cjpeg_error_mgr;

static void cjpeg_error_exit(j_common_ptr cinfo) {
    cjpeg_error_mgr *err = (cjpeg_error_mgr *)cinfo->err;
    if (err->message) (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

static void cjpeg_emit_message(j_common_ptr cinfo, int level) {
    cjpeg_error_mgr *err = (cjpeg_error_mgr *)cinfo->err;
    // level -1 is a warning (corrupt data); keep the first one, print nothing.
    if (level < 0 && !err->warned) {
        err->warned = 1;
        if (err->message) (*cinfo->err->format_message)(cinfo, err->message);
    }
}

static void cjpeg_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void cjpeg_install(cjpeg_error_mgr *err, char *message) {
    jpeg_std_error(&err->base);
    err->base.error_exit = cjpeg_error_exit;
    err->base.emit_message = cjpeg_emit_message;
    err->base.output_message = cjpeg_output_message;
    err->message = message;
    err->warned = 0;
    if (message) message[0] = 0;
}

static void cjpeg_set_error(char *error, const char *text) {
    if (!error) return;
    strncpy(error, text, CJPEG_ERROR_LENGTH - 1);
    error[CJPEG_ERROR_LENGTH - 1] = 0;
}

int cjpeg_encode(const uint8_t *pixels, int width, int height, int stride, int pixel_layout, int quality,
                 uint8_t **out, size_t *out_size, char error[CJPEG_ERROR_LENGTH]) {
    if (!pixels || !out || !out_size || width <= 0 || height <= 0 || width > 65500 || height > 65500) {
        cjpeg_set_error(error, "bad image size or buffer");
        return -1;
    }
    int bpp = pixel_layout == CJPEG_PIXELS_BGRA ? 4 : 3;
    if (stride < width * bpp) {
        cjpeg_set_error(error, "row stride smaller than a row");
        return -1;
    }
    struct jpeg_compress_struct cinfo;
    cjpeg_error_mgr err;
    // volatile: they change between setjmp and a possible longjmp.
    unsigned char *volatile buffer = NULL;
    volatile unsigned long size = 0;
    cinfo.err = &err.base;
    cjpeg_install(&err, error);
    if (setjmp(err.jump)) {
        // Not freeing `buffer`: after libjpeg grew it, it may already be freed memory (the mem
        // destination only updates the caller's pointer when it finishes). Encoding only fails
        // on arguments checked above or on memory exhaustion.
        jpeg_destroy_compress(&cinfo);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, (unsigned char **)&buffer, (unsigned long *)&size);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = bpp;
    cinfo.in_color_space = pixel_layout == CJPEG_PIXELS_BGRA ? JCS_EXT_BGRA : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality < 1 ? 1 : (quality > 100 ? 100 : quality), TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)cinfo.next_scanline * (size_t)stride);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *out = buffer;
    *out_size = size;
    return 0;
}

void cjpeg_free(void *p) { free(p); }

int cjpeg_read_header(const uint8_t *data, size_t size, int *width, int *height, int *components,
                      char error[CJPEG_ERROR_LENGTH]) {
    if (!data || size < 4) {
        cjpeg_set_error(error, "too short to be a JPEG");
        return -1;
    }
    struct jpeg_decompress_struct cinfo;
    cjpeg_error_mgr err;
    cinfo.err = &err.base;
    cjpeg_install(&err, error);
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    if (width) *width = (int)cinfo.image_width;
    if (height) *height = (int)cinfo.image_height;
    if (components) *components = cinfo.num_components;
    jpeg_destroy_decompress(&cinfo);
    return 0;
}

int cjpeg_decode(const uint8_t *data, size_t size, int pixel_layout, uint8_t *dst, int dst_stride,
                 int width, int height, char error[CJPEG_ERROR_LENGTH]) {
    int bpp = pixel_layout == CJPEG_PIXELS_BGRA ? 4 : 3;
    if (!data || !dst || size < 4 || width <= 0 || height <= 0 || dst_stride < width * bpp) {
        cjpeg_set_error(error, "bad buffer or size");
        return -1;
    }
    struct jpeg_decompress_struct cinfo;
    cjpeg_error_mgr err;
    cinfo.err = &err.base;
    cjpeg_install(&err, error);
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    if ((int)cinfo.image_width != width || (int)cinfo.image_height != height) {
        snprintf(error, CJPEG_ERROR_LENGTH, "JPEG is %ux%u, not %dx%d", cinfo.image_width, cinfo.image_height,
                 width, height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    cinfo.out_color_space = pixel_layout == CJPEG_PIXELS_BGRA ? JCS_EXT_BGRA : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = (JSAMPROW)(dst + (size_t)cinfo.output_scanline * (size_t)dst_stride);
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
    }
    if (err.warned) {   // corrupt data: libjpeg would have filled the rest with grey
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    if (err.warned) return -1;
    return 0;
}
