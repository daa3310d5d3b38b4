// V4L2 for Swift: the VIDIOC_* request numbers and most V4L2_CID_* / fourcc values are
// function-like or composite macros Swift cannot import, so they are re-exported here as
// functions and plain enum constants. The wrappers return -errno on failure (never set errno
// for the caller to read later, which a Swift thread switch could clobber).
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <linux/videodev2.h>

// Request numbers (each is _IOR/_IOW/_IOWR of a struct: a function-like macro).
static inline unsigned long cv4l2_vidioc_querycap(void) { return VIDIOC_QUERYCAP; }
static inline unsigned long cv4l2_vidioc_enum_fmt(void) { return VIDIOC_ENUM_FMT; }
static inline unsigned long cv4l2_vidioc_enum_framesizes(void) { return VIDIOC_ENUM_FRAMESIZES; }
static inline unsigned long cv4l2_vidioc_enum_frameintervals(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
static inline unsigned long cv4l2_vidioc_g_fmt(void) { return VIDIOC_G_FMT; }
static inline unsigned long cv4l2_vidioc_s_fmt(void) { return VIDIOC_S_FMT; }
static inline unsigned long cv4l2_vidioc_g_parm(void) { return VIDIOC_G_PARM; }
static inline unsigned long cv4l2_vidioc_s_parm(void) { return VIDIOC_S_PARM; }
static inline unsigned long cv4l2_vidioc_queryctrl(void) { return VIDIOC_QUERYCTRL; }
static inline unsigned long cv4l2_vidioc_querymenu(void) { return VIDIOC_QUERYMENU; }
static inline unsigned long cv4l2_vidioc_g_ctrl(void) { return VIDIOC_G_CTRL; }
static inline unsigned long cv4l2_vidioc_s_ctrl(void) { return VIDIOC_S_CTRL; }
static inline unsigned long cv4l2_vidioc_reqbufs(void) { return VIDIOC_REQBUFS; }
static inline unsigned long cv4l2_vidioc_querybuf(void) { return VIDIOC_QUERYBUF; }
static inline unsigned long cv4l2_vidioc_qbuf(void) { return VIDIOC_QBUF; }
static inline unsigned long cv4l2_vidioc_dqbuf(void) { return VIDIOC_DQBUF; }
static inline unsigned long cv4l2_vidioc_streamon(void) { return VIDIOC_STREAMON; }
static inline unsigned long cv4l2_vidioc_streamoff(void) { return VIDIOC_STREAMOFF; }

// Plain constants (all fit an int; composite macros like V4L2_CID_CAMERA_CLASS_BASE + 1 and
// v4l2_fourcc('Y','U','Y','V') are evaluated by the C compiler here).
enum {
    CV4L2_CAP_VIDEO_CAPTURE = V4L2_CAP_VIDEO_CAPTURE,
    CV4L2_CAP_VIDEO_CAPTURE_MPLANE = V4L2_CAP_VIDEO_CAPTURE_MPLANE,
    CV4L2_CAP_META_CAPTURE = V4L2_CAP_META_CAPTURE,
    CV4L2_CAP_STREAMING = V4L2_CAP_STREAMING,

    CV4L2_BUF_TYPE_VIDEO_CAPTURE = V4L2_BUF_TYPE_VIDEO_CAPTURE,
    CV4L2_MEMORY_MMAP = V4L2_MEMORY_MMAP,
    CV4L2_FIELD_ANY = V4L2_FIELD_ANY,
    CV4L2_FIELD_NONE = V4L2_FIELD_NONE,
    CV4L2_BUF_FLAG_ERROR = V4L2_BUF_FLAG_ERROR,
    CV4L2_BUF_FLAG_TIMESTAMP_MASK = V4L2_BUF_FLAG_TIMESTAMP_MASK,
    CV4L2_BUF_FLAG_TIMESTAMP_MONOTONIC = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC,
    CV4L2_CAP_TIMEPERFRAME = V4L2_CAP_TIMEPERFRAME,

    CV4L2_FRMSIZE_TYPE_DISCRETE = V4L2_FRMSIZE_TYPE_DISCRETE,
    CV4L2_FRMSIZE_TYPE_CONTINUOUS = V4L2_FRMSIZE_TYPE_CONTINUOUS,
    CV4L2_FRMSIZE_TYPE_STEPWISE = V4L2_FRMSIZE_TYPE_STEPWISE,
    CV4L2_FRMIVAL_TYPE_DISCRETE = V4L2_FRMIVAL_TYPE_DISCRETE,
    CV4L2_FRMIVAL_TYPE_CONTINUOUS = V4L2_FRMIVAL_TYPE_CONTINUOUS,
    CV4L2_FRMIVAL_TYPE_STEPWISE = V4L2_FRMIVAL_TYPE_STEPWISE,

    CV4L2_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV,
    CV4L2_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12,
    CV4L2_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420,
    CV4L2_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG,

    CV4L2_CTRL_TYPE_INTEGER = V4L2_CTRL_TYPE_INTEGER,
    CV4L2_CTRL_TYPE_BOOLEAN = V4L2_CTRL_TYPE_BOOLEAN,
    CV4L2_CTRL_TYPE_MENU = V4L2_CTRL_TYPE_MENU,
    CV4L2_CTRL_TYPE_BUTTON = V4L2_CTRL_TYPE_BUTTON,
    CV4L2_CTRL_TYPE_INTEGER_MENU = V4L2_CTRL_TYPE_INTEGER_MENU,
    CV4L2_CTRL_TYPE_CTRL_CLASS = V4L2_CTRL_TYPE_CTRL_CLASS,
    CV4L2_CTRL_FLAG_DISABLED = V4L2_CTRL_FLAG_DISABLED,
    CV4L2_CTRL_FLAG_READ_ONLY = V4L2_CTRL_FLAG_READ_ONLY,
    CV4L2_CTRL_FLAG_INACTIVE = V4L2_CTRL_FLAG_INACTIVE,
    CV4L2_CTRL_FLAG_WRITE_ONLY = V4L2_CTRL_FLAG_WRITE_ONLY,
    CV4L2_CTRL_FLAG_NEXT_CTRL = V4L2_CTRL_FLAG_NEXT_CTRL,

    CV4L2_CID_GAIN = V4L2_CID_GAIN,
    CV4L2_CID_AUTO_WHITE_BALANCE = V4L2_CID_AUTO_WHITE_BALANCE,
    CV4L2_CID_WHITE_BALANCE_TEMPERATURE = V4L2_CID_WHITE_BALANCE_TEMPERATURE,
    CV4L2_CID_EXPOSURE_AUTO = V4L2_CID_EXPOSURE_AUTO,
    CV4L2_CID_EXPOSURE_ABSOLUTE = V4L2_CID_EXPOSURE_ABSOLUTE,
    CV4L2_CID_FOCUS_ABSOLUTE = V4L2_CID_FOCUS_ABSOLUTE,
    CV4L2_CID_FOCUS_AUTO = V4L2_CID_FOCUS_AUTO,
    CV4L2_CID_ZOOM_ABSOLUTE = V4L2_CID_ZOOM_ABSOLUTE,
    CV4L2_CID_AUTO_EXPOSURE_BIAS = V4L2_CID_AUTO_EXPOSURE_BIAS,
    CV4L2_CID_ISO_SENSITIVITY = V4L2_CID_ISO_SENSITIVITY,
    CV4L2_CID_ISO_SENSITIVITY_AUTO = V4L2_CID_ISO_SENSITIVITY_AUTO,
    CV4L2_CID_AUTO_FOCUS_START = V4L2_CID_AUTO_FOCUS_START,
    CV4L2_CID_FLASH_LED_MODE = V4L2_CID_FLASH_LED_MODE,
    CV4L2_CID_FLASH_TORCH_INTENSITY = V4L2_CID_FLASH_TORCH_INTENSITY,

    CV4L2_EXPOSURE_AUTO = V4L2_EXPOSURE_AUTO,
    CV4L2_EXPOSURE_MANUAL = V4L2_EXPOSURE_MANUAL,
    CV4L2_EXPOSURE_SHUTTER_PRIORITY = V4L2_EXPOSURE_SHUTTER_PRIORITY,
    CV4L2_EXPOSURE_APERTURE_PRIORITY = V4L2_EXPOSURE_APERTURE_PRIORITY,
    CV4L2_ISO_SENSITIVITY_MANUAL = V4L2_ISO_SENSITIVITY_MANUAL,
    CV4L2_ISO_SENSITIVITY_AUTO = V4L2_ISO_SENSITIVITY_AUTO,
    CV4L2_FLASH_LED_MODE_NONE = V4L2_FLASH_LED_MODE_NONE,
    CV4L2_FLASH_LED_MODE_FLASH = V4L2_FLASH_LED_MODE_FLASH,
    CV4L2_FLASH_LED_MODE_TORCH = V4L2_FLASH_LED_MODE_TORCH,
};

// V4L2_CAP_DEVICE_CAPS is bit 31 (does not fit an int enum constant).
static inline uint32_t cv4l2_cap_device_caps(void) { return V4L2_CAP_DEVICE_CAPS; }

/// open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC): the fd, or -errno.
int cv4l2_open(const char *path);
/// close(fd): 0 or -errno.
int cv4l2_close(int fd);
/// ioctl(fd, request, arg), retried on EINTR: 0 (or the ioctl's non-negative result) or -errno.
int cv4l2_ioctl(int fd, unsigned long request, void *arg);
/// mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset): the mapping, or NULL with
/// *error set to -errno.
void *cv4l2_mmap(int fd, size_t length, int64_t offset, int *error);
/// munmap: 0 or -errno.
int cv4l2_munmap(void *address, size_t length);
/// Waits until `fd` is readable (a filled buffer waits) or `wake_fd` is readable, for at most
/// `timeout_ms` (-1 forever). Returns a bit set (1: fd readable, 2: fd error/hang-up,
/// 4: wake_fd readable), 0 on timeout, or -errno. `wake_fd` < 0 is ignored. Retries on EINTR.
int cv4l2_poll(int fd, int wake_fd, int timeout_ms);
/// An eventfd (non-blocking, close-on-exec) to wake cv4l2_poll, or -errno.
int cv4l2_eventfd(void);
/// Signals / drains an eventfd: 0 or -errno.
int cv4l2_eventfd_signal(int fd);
int cv4l2_eventfd_drain(int fd);
/// CLOCK_MONOTONIC now, in nanoseconds.
int64_t cv4l2_monotonic_ns(void);
/// strerror_r into `buffer` (thread-safe text of an errno).
void cv4l2_strerror(int error, char *buffer, size_t length);
