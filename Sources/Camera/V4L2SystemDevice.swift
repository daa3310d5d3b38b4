import CV4L2
import Glibc

/// One open /dev/videoN node, through the CV4L2 shim. The kernel serializes ioctls itself, so
/// this class only owns the file descriptors.
public final class V4L2SystemDevice: V4L2DeviceIO, @unchecked Sendable {
    // @unchecked: `fd` and `wakeFD` are set in init and only invalidated by close(), after which
    // the owner makes no other call.
    public let path: String
    private let fd: Int32
    private let wakeFD: Int32
    private var closed = false

    /// Opens `path` read-write, non-blocking, close-on-exec.
    public init(path: String) throws(V4L2Error) {
        let fd = cv4l2_open(path)
        guard fd >= 0 else { throw V4L2Error(-fd, "open \(path)") }
        let wake = cv4l2_eventfd()
        guard wake >= 0 else {
            _ = cv4l2_close(fd)
            throw V4L2Error(-wake, "eventfd")
        }
        self.path = path
        self.fd = fd
        self.wakeFD = wake
    }

    deinit { close() }

    private func ioctl<T>(_ request: UInt, _ arg: inout T, _ name: String) throws(V4L2Error) {
        let r = withUnsafeMutablePointer(to: &arg) { cv4l2_ioctl(fd, request, $0) }
        if r < 0 { throw V4L2Error(-r, name) }
    }

    /// Like `ioctl`, but EINVAL (the end of an enumeration) answers false.
    private func enumerate<T>(_ request: UInt, _ arg: inout T, _ name: String) throws(V4L2Error) -> Bool {
        let r = withUnsafeMutablePointer(to: &arg) { cv4l2_ioctl(fd, request, $0) }
        if r == -EINVAL { return false }
        if r < 0 { throw V4L2Error(-r, name) }
        return true
    }

    private static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    public func queryCapability() throws(V4L2Error) -> V4L2Capability {
        var cap = v4l2_capability()
        try ioctl(cv4l2_vidioc_querycap(), &cap, "VIDIOC_QUERYCAP")
        let caps = cap.capabilities & cv4l2_cap_device_caps() != 0 ? cap.device_caps : cap.capabilities
        return V4L2Capability(driver: Self.string(cap.driver), card: Self.string(cap.card),
                              busInfo: Self.string(cap.bus_info), capabilities: caps)
    }

    public func enumFormat(index: Int) throws(V4L2Error) -> V4L2FormatDescription? {
        var d = v4l2_fmtdesc()
        d.index = UInt32(index)
        d.type = UInt32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        guard try enumerate(cv4l2_vidioc_enum_fmt(), &d, "VIDIOC_ENUM_FMT") else { return nil }
        return V4L2FormatDescription(fourcc: d.pixelformat, description: Self.string(d.description))
    }

    public func enumFrameSize(fourcc: UInt32, index: Int) throws(V4L2Error) -> V4L2FrameSize? {
        var e = v4l2_frmsizeenum()
        e.index = UInt32(index)
        e.pixel_format = fourcc
        guard try enumerate(cv4l2_vidioc_enum_framesizes(), &e, "VIDIOC_ENUM_FRAMESIZES") else { return nil }
        if e.type == UInt32(CV4L2_FRMSIZE_TYPE_DISCRETE) {
            return .discrete(width: Int(e.discrete.width), height: Int(e.discrete.height))
        }
        let s = e.stepwise
        return .stepwise(minWidth: Int(s.min_width), maxWidth: Int(s.max_width), stepWidth: Int(max(1, s.step_width)),
                         minHeight: Int(s.min_height), maxHeight: Int(s.max_height), stepHeight: Int(max(1, s.step_height)))
    }

    public func enumFrameInterval(fourcc: UInt32, width: Int, height: Int, index: Int) throws(V4L2Error) -> V4L2FrameInterval? {
        var e = v4l2_frmivalenum()
        e.index = UInt32(index)
        e.pixel_format = fourcc
        e.width = UInt32(width)
        e.height = UInt32(height)
        guard try enumerate(cv4l2_vidioc_enum_frameintervals(), &e, "VIDIOC_ENUM_FRAMEINTERVALS") else { return nil }
        if e.type == UInt32(CV4L2_FRMIVAL_TYPE_DISCRETE) {
            return .discrete(V4L2Fraction(e.discrete.numerator, e.discrete.denominator))
        }
        let s = e.stepwise
        return .stepwise(min: V4L2Fraction(s.min.numerator, s.min.denominator),
                         max: V4L2Fraction(s.max.numerator, s.max.denominator),
                         step: V4L2Fraction(s.step.numerator, s.step.denominator))
    }

    private static func pix(_ f: v4l2_format) -> V4L2PixFormat {
        let p = f.fmt.pix
        return V4L2PixFormat(width: Int(p.width), height: Int(p.height), fourcc: p.pixelformat,
                             bytesPerLine: Int(p.bytesperline), sizeImage: Int(p.sizeimage))
    }

    public func getFormat() throws(V4L2Error) -> V4L2PixFormat {
        var f = v4l2_format()
        f.type = UInt32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        try ioctl(cv4l2_vidioc_g_fmt(), &f, "VIDIOC_G_FMT")
        return Self.pix(f)
    }

    public func setFormat(_ format: V4L2PixFormat) throws(V4L2Error) -> V4L2PixFormat {
        var f = v4l2_format()
        f.type = UInt32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        f.fmt.pix.width = UInt32(format.width)
        f.fmt.pix.height = UInt32(format.height)
        f.fmt.pix.pixelformat = format.fourcc
        f.fmt.pix.field = UInt32(CV4L2_FIELD_NONE)
        try ioctl(cv4l2_vidioc_s_fmt(), &f, "VIDIOC_S_FMT")
        return Self.pix(f)
    }

    public func getFrameInterval() throws(V4L2Error) -> V4L2Fraction? {
        var p = v4l2_streamparm()
        p.type = UInt32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        try ioctl(cv4l2_vidioc_g_parm(), &p, "VIDIOC_G_PARM")
        guard p.parm.capture.capability & UInt32(CV4L2_CAP_TIMEPERFRAME) != 0 else { return nil }
        let t = p.parm.capture.timeperframe
        return V4L2Fraction(t.numerator, t.denominator)
    }

    public func setFrameInterval(_ interval: V4L2Fraction) throws(V4L2Error) -> V4L2Fraction {
        var p = v4l2_streamparm()
        p.type = UInt32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        p.parm.capture.timeperframe.numerator = interval.numerator
        p.parm.capture.timeperframe.denominator = interval.denominator
        try ioctl(cv4l2_vidioc_s_parm(), &p, "VIDIOC_S_PARM")
        let t = p.parm.capture.timeperframe
        return V4L2Fraction(t.numerator, t.denominator)
    }

    public func queryControl(id: UInt32) throws(V4L2Error) -> V4L2ControlInfo? {
        var q = v4l2_queryctrl()
        q.id = id
        guard try enumerate(cv4l2_vidioc_queryctrl(), &q, "VIDIOC_QUERYCTRL") else { return nil }
        return V4L2ControlInfo(id: q.id, name: Self.string(q.name), type: V4L2ControlType(raw: q.type),
                               minimum: Int64(q.minimum), maximum: Int64(q.maximum), step: Int64(q.step),
                               defaultValue: Int64(q.default_value), flags: q.flags)
    }

    public func queryMenu(id: UInt32, index: Int) throws(V4L2Error) -> V4L2MenuItem? {
        guard let info = try queryControl(id: id) else { return nil }
        var m = v4l2_querymenu()
        m.id = id
        m.index = UInt32(index)
        guard try enumerate(cv4l2_vidioc_querymenu(), &m, "VIDIOC_QUERYMENU") else { return nil }
        if info.type == .integerMenu { return V4L2MenuItem(index: index, value: Int64(m.value)) }
        return V4L2MenuItem(index: index, name: Self.string(m.name))
    }

    public func getControl(id: UInt32) throws(V4L2Error) -> Int32 {
        var c = v4l2_control(id: id, value: 0)
        try ioctl(cv4l2_vidioc_g_ctrl(), &c, "VIDIOC_G_CTRL")
        return c.value
    }

    public func setControl(id: UInt32, value: Int32) throws(V4L2Error) {
        var c = v4l2_control(id: id, value: value)
        try ioctl(cv4l2_vidioc_s_ctrl(), &c, "VIDIOC_S_CTRL")
    }

    public func requestBuffers(count: Int) throws(V4L2Error) -> Int {
        var r = v4l2_requestbuffers()
        r.count = UInt32(count)
        r.type = UInt32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        r.memory = UInt32(CV4L2_MEMORY_MMAP)
        try ioctl(cv4l2_vidioc_reqbufs(), &r, "VIDIOC_REQBUFS")
        return Int(r.count)
    }

    private func buffer(_ index: Int) -> v4l2_buffer {
        var b = v4l2_buffer()
        b.index = UInt32(index)
        b.type = UInt32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        b.memory = UInt32(CV4L2_MEMORY_MMAP)
        return b
    }

    public func mapBuffer(index: Int) throws(V4L2Error) -> UnsafeMutableRawBufferPointer {
        var b = buffer(index)
        try ioctl(cv4l2_vidioc_querybuf(), &b, "VIDIOC_QUERYBUF")
        var error: Int32 = 0
        guard let p = cv4l2_mmap(fd, Int(b.length), Int64(b.m.offset), &error) else {
            throw V4L2Error(-error, "mmap buffer \(index)")
        }
        return UnsafeMutableRawBufferPointer(start: p, count: Int(b.length))
    }

    public func unmapBuffer(_ memory: UnsafeMutableRawBufferPointer) {
        if let base = memory.baseAddress { _ = cv4l2_munmap(base, memory.count) }
    }

    public func queueBuffer(index: Int) throws(V4L2Error) {
        var b = buffer(index)
        try ioctl(cv4l2_vidioc_qbuf(), &b, "VIDIOC_QBUF")
    }

    public func dequeueBuffer() throws(V4L2Error) -> V4L2DequeuedBuffer {
        var b = buffer(0)
        try ioctl(cv4l2_vidioc_dqbuf(), &b, "VIDIOC_DQBUF")
        let monotonic = b.flags & UInt32(CV4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(CV4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        let ts = Int64(b.timestamp.tv_sec) * 1_000_000_000 + Int64(b.timestamp.tv_usec) * 1000
        return V4L2DequeuedBuffer(index: Int(b.index), bytesUsed: Int(b.bytesused), sequence: b.sequence,
                                  timestampNs: monotonic ? ts : nil, hasError: b.flags & UInt32(CV4L2_BUF_FLAG_ERROR) != 0)
    }

    public func streamOn() throws(V4L2Error) {
        var type = Int32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        try ioctl(cv4l2_vidioc_streamon(), &type, "VIDIOC_STREAMON")
    }

    public func streamOff() throws(V4L2Error) {
        var type = Int32(CV4L2_BUF_TYPE_VIDEO_CAPTURE)
        try ioctl(cv4l2_vidioc_streamoff(), &type, "VIDIOC_STREAMOFF")
    }

    public func waitForFrame(timeoutMs: Int) throws(V4L2Error) -> Bool {
        let r = cv4l2_poll(fd, wakeFD, Int32(clamping: timeoutMs))
        if r < 0 { throw V4L2Error(-r, "poll") }
        if r & 4 != 0 {
            _ = cv4l2_eventfd_drain(wakeFD)
            return false
        }
        // Error/hang-up bits: let the DQBUF that follows report what happened.
        return r & 3 != 0
    }

    public func interruptWait() { _ = cv4l2_eventfd_signal(wakeFD) }

    public func close() {
        guard !closed else { return }
        closed = true
        _ = cv4l2_close(fd)
        _ = cv4l2_close(wakeFD)
    }
}
