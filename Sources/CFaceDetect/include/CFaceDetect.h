// C API over OpenCV's cascade classifier (C++), so Swift can call it without C++ interop.
// One handle wraps one cv::CascadeClassifier; calls on a handle are serialized inside the shim.
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfd cfd;

typedef struct {
    int x, y, width, height;
} cfd_rect;

/// Loads a Haar or LBP cascade (OpenCV's XML, e.g. opencv-data's haarcascade_frontalface_*.xml).
/// Returns NULL on failure with the reason in `error` (NUL-terminated, at most `error_size` bytes).
cfd *cfd_create(const char *cascade_path, char *error, size_t error_size);
void cfd_destroy(cfd *detector);

/// Finds faces in an 8-bit grey picture (histogram-equalised first). Faces smaller than
/// `min_size` pixels a side are not looked for; `scale_factor` (> 1) is the step between the
/// scales searched and `min_neighbors` how many overlapping hits a face needs. Writes at most
/// `max_faces` rectangles (pixels of this picture) to `out` and returns how many faces there
/// were, or -1 with the reason in `error`.
int cfd_detect(cfd *detector, const uint8_t *gray, int width, int height, int stride, int min_size,
               double scale_factor, int min_neighbors, cfd_rect *out, int max_faces, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
