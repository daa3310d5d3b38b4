/// Two cameras as their drivers describe them, for tests and demos without hardware.
extension V4L2Recording {
    /// A Logitech C920-class UVC webcam (uvcvideo): YUYV 640x480…1920x1080 with the intervals
    /// its descriptors list, MJPEG up to 1920x1080@30, no NV12. Control ids, ranges and menus
    /// as uvcvideo reports them; writes to a control whose auto mode is on fail with EACCES,
    /// and S_PARM while streaming with EBUSY, as uvcvideo does.
    public static let uvcWebcamJSON = """
    {
      "driver": "uvcvideo", "card": "HD Pro Webcam C920", "busInfo": "usb-0000:00:14.0-1",
      "sParmWhileStreaming": "EBUSY",
      "formats": [
        {"fourcc": "YUYV", "description": "YUYV 4:2:2", "sizes": [
          {"width": 640, "height": 480, "intervals": ["1/30", "1/24", "1/20", "1/15", "1/10", "2/15", "1/5"]},
          {"width": 800, "height": 600, "intervals": ["1/24", "1/20", "1/15", "1/10", "2/15", "1/5"]},
          {"width": 1280, "height": 720, "intervals": ["1/10", "2/15", "1/5"]},
          {"width": 1920, "height": 1080, "intervals": ["1/5"]}
        ]},
        {"fourcc": "MJPG", "description": "Motion-JPEG", "sizes": [
          {"width": 640, "height": 480, "intervals": ["1/30", "1/24", "1/20", "1/15", "1/10", "2/15", "1/5"]},
          {"width": 1280, "height": 720, "intervals": ["1/30", "1/24", "1/20", "1/15", "1/10", "2/15", "1/5"]},
          {"width": 1920, "height": 1080, "intervals": ["1/30", "1/24", "1/20", "1/15", "1/10", "2/15", "1/5"]}
        ]}
      ],
      "controls": [
        {"id": "0x00980913", "name": "Gain", "type": "int", "min": 0, "max": 255, "step": 1, "default": 0},
        {"id": "0x0098090c", "name": "White Balance, Automatic", "type": "bool", "min": 0, "max": 1, "step": 1, "default": 1},
        {"id": "0x0098091a", "name": "White Balance Temperature", "type": "int", "min": 2000, "max": 6500, "step": 1,
         "default": 4000, "activeWhen": {"id": "0x0098090c", "values": [0]}, "inactiveError": "EACCES"},
        {"id": "0x009a0901", "name": "Auto Exposure", "type": "menu", "min": 0, "max": 3, "step": 1, "default": 3,
         "menu": [{"index": 1, "name": "Manual Mode"}, {"index": 3, "name": "Aperture Priority Mode"}]},
        {"id": "0x009a0902", "name": "Exposure Time, Absolute", "type": "int", "min": 3, "max": 2047, "step": 1,
         "default": 250, "activeWhen": {"id": "0x009a0901", "values": [1]}, "inactiveError": "EACCES"},
        {"id": "0x009a090a", "name": "Focus, Absolute", "type": "int", "min": 0, "max": 250, "step": 5, "default": 0,
         "activeWhen": {"id": "0x009a090c", "values": [0]}, "inactiveError": "EACCES"},
        {"id": "0x009a090c", "name": "Focus, Automatic Continuous", "type": "bool", "min": 0, "max": 1, "step": 1, "default": 1},
        {"id": "0x009a090d", "name": "Zoom, Absolute", "type": "int", "min": 100, "max": 500, "step": 1, "default": 100}
      ]
    }
    """

    /// A phone-style sensor behind a V4L2 ISP driver (the kind found on embedded boards):
    /// NV12 at any size 64x64…4208x3120 in steps of 16x8 with 1…30 fps continuous, YU12 at two
    /// sizes, a torch (flash LED in torch mode with an intensity in mA), exposure bias as an
    /// integer menu in milli-EV and ISO sensitivity as an integer menu. Writes to inactive
    /// controls fail with EBUSY; S_PARM while streaming is accepted.
    public static let phoneSensorJSON = """
    {
      "driver": "qcom-camss", "card": "Back Camera imx258", "busInfo": "platform:1b0c000.camss",
      "formats": [
        {"fourcc": "NV12", "description": "Y/UV 4:2:0", "stepwise": {
          "minWidth": 64, "maxWidth": 4208, "stepWidth": 16, "minHeight": 64, "maxHeight": 3120, "stepHeight": 8,
          "minInterval": "1/30", "maxInterval": "1/1"}},
        {"fourcc": "YU12", "description": "Planar YUV 4:2:0", "sizes": [
          {"width": 640, "height": 480, "minInterval": "1/60", "maxInterval": "1/1"},
          {"width": 1920, "height": 1080, "intervals": ["1/30", "1/15"]}
        ]},
        {"fourcc": "BA10", "description": "10-bit Bayer GRGR/BGBG", "sizes": [
          {"width": 4208, "height": 3120, "intervals": ["1/30"]}
        ]}
      ],
      "controls": [
        {"id": "0x009a0901", "name": "Auto Exposure", "type": "menu", "min": 0, "max": 1, "step": 1, "default": 0,
         "menu": [{"index": 0, "name": "Auto Mode"}, {"index": 1, "name": "Manual Mode"}]},
        {"id": "0x009a0902", "name": "Exposure Time, Absolute", "type": "int", "min": 1, "max": 3330, "step": 1,
         "default": 333, "activeWhen": {"id": "0x009a0901", "values": [1]}, "inactiveError": "EBUSY"},
        {"id": "0x009a0913", "name": "Auto Exposure, Bias", "type": "intmenu", "min": 0, "max": 8, "step": 1, "default": 4,
         "menu": [{"index": 0, "value": -2000}, {"index": 1, "value": -1500}, {"index": 2, "value": -1000},
                  {"index": 3, "value": -500}, {"index": 4, "value": 0}, {"index": 5, "value": 500},
                  {"index": 6, "value": 1000}, {"index": 7, "value": 1500}, {"index": 8, "value": 2000}]},
        {"id": "0x009a0918", "name": "ISO Sensitivity, Auto", "type": "menu", "min": 0, "max": 1, "step": 1, "default": 1,
         "menu": [{"index": 0, "name": "Manual"}, {"index": 1, "name": "Auto"}]},
        {"id": "0x009a0917", "name": "ISO Sensitivity", "type": "intmenu", "min": 0, "max": 5, "step": 1, "default": 0,
         "menu": [{"index": 0, "value": 100}, {"index": 1, "value": 200}, {"index": 2, "value": 400},
                  {"index": 3, "value": 800}, {"index": 4, "value": 1600}, {"index": 5, "value": 3200}],
         "activeWhen": {"id": "0x009a0918", "values": [0]}, "inactiveError": "EBUSY"},
        {"id": "0x0098090c", "name": "White Balance, Automatic", "type": "bool", "min": 0, "max": 1, "step": 1, "default": 1},
        {"id": "0x0098091a", "name": "White Balance Temperature", "type": "int", "min": 2500, "max": 7500, "step": 100,
         "default": 5000, "activeWhen": {"id": "0x0098090c", "values": [0]}, "inactiveError": "EBUSY"},
        {"id": "0x009a090a", "name": "Focus, Absolute", "type": "int", "min": 0, "max": 1023, "step": 1, "default": 0},
        {"id": "0x009a090c", "name": "Focus, Automatic Continuous", "type": "bool", "min": 0, "max": 1, "step": 1, "default": 1},
        {"id": "0x009a091c", "name": "Auto Focus, Start", "type": "button", "min": 0, "max": 0, "step": 0, "default": 0},
        {"id": "0x009c0901", "name": "LED Mode", "type": "menu", "min": 0, "max": 2, "step": 1, "default": 0,
         "menu": [{"index": 0, "name": "Off"}, {"index": 1, "name": "Flash"}, {"index": 2, "name": "Torch"}]},
        {"id": "0x009c0908", "name": "Torch Intensity", "type": "int", "min": 25, "max": 200, "step": 25, "default": 100}
      ]
    }
    """
}
