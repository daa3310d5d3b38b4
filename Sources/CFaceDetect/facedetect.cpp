// C API over cv::CascadeClassifier (OpenCV 4.6, Debian's libopencv-objdetect-dev).
#include "CFaceDetect.h"
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>

#include <cstdio>
#include <exception>
#include <mutex>
#include <new>
#include <vector>

struct cfd {
    cv::CascadeClassifier cascade;
    // detectMultiScale keeps per-call state in the classifier: one call at a time.
    std::mutex lock;
    cv::Mat equalized;
};

namespace {
void say(char *error, size_t size, const char *what) {
    if (error && size > 0) std::snprintf(error, size, "%s", what);
}
}  // namespace

extern "C" cfd *cfd_create(const char *cascade_path, char *error, size_t error_size) {
    if (!cascade_path) {
        say(error, error_size, "no cascade path");
        return nullptr;
    }
    // Detection runs at a bounded rate on one worker thread; OpenCV's own thread pool would take
    // the cores capture and encoding need.
    cv::setNumThreads(1);
    cfd *d = new (std::nothrow) cfd;
    if (!d) {
        say(error, error_size, "out of memory");
        return nullptr;
    }
    try {
        if (!d->cascade.load(cascade_path) || d->cascade.empty()) {
            say(error, error_size, "not a cascade classifier file OpenCV can load");
            delete d;
            return nullptr;
        }
    } catch (const std::exception &e) {
        say(error, error_size, e.what());
        delete d;
        return nullptr;
    }
    return d;
}

extern "C" void cfd_destroy(cfd *detector) { delete detector; }

extern "C" int cfd_detect(cfd *detector, const uint8_t *gray, int width, int height, int stride, int min_size,
                          double scale_factor, int min_neighbors, cfd_rect *out, int max_faces, char *error,
                          size_t error_size) {
    if (!detector || !gray || width <= 0 || height <= 0 || stride < width || scale_factor <= 1.0 || min_neighbors < 0) {
        say(error, error_size, "bad arguments");
        return -1;
    }
    std::lock_guard<std::mutex> guard(detector->lock);
    try {
        const cv::Mat picture(height, width, CV_8UC1, const_cast<uint8_t *>(gray), static_cast<size_t>(stride));
        cv::equalizeHist(picture, detector->equalized);
        std::vector<cv::Rect> found;
        const int side = min_size > 0 ? min_size : 0;
        detector->cascade.detectMultiScale(detector->equalized, found, scale_factor, min_neighbors, 0, cv::Size(side, side));
        const int n = static_cast<int>(found.size());
        for (int i = 0; i < n && i < max_faces && out; ++i) {
            out[i] = cfd_rect{found[i].x, found[i].y, found[i].width, found[i].height};
        }
        return n;
    } catch (const std::exception &e) {
        say(error, error_size, e.what());
        return -1;
    }
}
