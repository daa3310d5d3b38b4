import CV4L2
import CYUV
import Foundation
import Media
import Render

/// A camera as a kernel driver would present it, built from a `V4L2Recording`: the hardware
/// side (control values, buffers, streaming) shared by every handle `open()` returns. S_FMT
/// picks the nearest recorded size, S_CTRL clamps and rounds to the step, buffers cycle in
/// order with increasing sequence numbers, and `vanish()` makes every call fail with ENODEV.
/// Frames are produced on demand: a queued buffer is filled when the stream waits for it,
/// limited by `allowFrames` so tests get an exact number of frames without sleeping.
public final class RecordedV4L2Camera: @unchecked Sendable {
    // @unchecked: all mutable state is guarded by `condition`.
    public let recording: V4L2Recording
    public let path: String
    private let condition = NSCondition()
    private var values: [UInt32: Int32] = [:]
    private var vanished = false
    private var openError: Int32?
    private var frameBudget: Int?
    private var corruptSequences: Set<UInt32> = []
    // Streaming state (one owner at a time, like the kernel's file-handle ownership of a queue).
    private var owner: ObjectIdentifier?
    private var format: V4L2PixFormat
    private var interval: V4L2Fraction
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var incoming: [Int] = []
    private var done: [(index: Int, bytes: Int, sequence: UInt32, ts: Int64)] = []
    private var streaming = false
    private var sequence: UInt32 = 0
    private var interrupted = false
    private var pictures: [String: [UInt8]] = [:]
    private var shown: VideoFrame?
    /// Every DQBUF (buffer index, sequence) and QBUF (buffer index), in order, for tests.
    public private(set) var dequeueLog: [(index: Int, sequence: UInt32)] = []
    public private(set) var queueLog: [Int] = []

    public init(recording: V4L2Recording, path: String = "/dev/video0") {
        self.recording = recording
        self.path = path
        for c in recording.controls {
            if let id = V4L2Recording.controlID(c.id) { values[id] = Int32(clamping: c.default) }
        }
        let first = recording.formats.first
        let fourcc = first.flatMap { V4L2FourCC.code($0.fourcc) } ?? V4L2FourCC.yuyv
        let size = first?.sizes?.first.map { ($0.width, $0.height) } ?? first?.stepwise.map { ($0.minWidth, $0.minHeight) } ?? (640, 480)
        format = RecordedV4L2Camera.pix(fourcc: fourcc, width: size.0, height: size.1)
        interval = V4L2Fraction(1, 30)
    }

    public convenience init(json: String, path: String = "/dev/video0") throws(CameraError) {
        self.init(recording: try V4L2Recording.decode(json: json), path: path)
    }

    deinit { for b in buffers { b.deallocate() } }

    // MARK: What tests do to the hardware

    /// Opens a handle (like open(2) on the node).
    public func open() throws(V4L2Error) -> RecordedV4L2Device {
        try locked { () throws(V4L2Error) in
            if vanished { throw V4L2Error(ENOENT, "open \(path)") }
            if let e = openError { throw V4L2Error(e, "open \(path)") }
        }
        return RecordedV4L2Device(camera: self)
    }

    /// The device is unplugged: every call fails with ENODEV from now on.
    public func vanish() { locked { vanished = true; condition.broadcast() } }
    /// open() fails with this errno (EACCES, EBUSY), or succeeds again with nil.
    public func failOpen(with errno: Int32?) { locked { openError = errno } }
    /// Lets `n` more frames be produced (nil: unlimited).
    public func allowFrames(_ n: Int?) {
        locked {
            frameBudget = n.map { (frameBudget ?? 0) + $0 }
            condition.broadcast()
        }
    }
    /// Streams `picture` (fitted into each format's size, keeping its aspect) instead of the test
    /// picture, as if the camera looked at it; nil goes back to the test picture.
    public func show(_ picture: VideoFrame?) {
        locked {
            shown = picture
            pictures = [:]
        }
    }
    /// Frames with these sequence numbers are delivered with garbage bytes.
    public func corruptFrames(_ sequences: Set<UInt32>) { locked { corruptSequences = sequences } }
    public func controlValue(_ id: UInt32) -> Int32? { locked { values[id] } }
    public var currentFormat: V4L2PixFormat { locked { format } }
    public var currentInterval: V4L2Fraction { locked { interval } }
    public var isStreaming: Bool { locked { streaming } }

    // MARK: Driver behaviour

    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    private func alive(_ op: String) throws(V4L2Error) {
        if vanished { throw V4L2Error(ENODEV, op) }
    }

    static func pix(fourcc: UInt32, width: Int, height: Int) -> V4L2PixFormat {
        switch fourcc {
        case V4L2FourCC.yuyv:
            return V4L2PixFormat(width: width, height: height, fourcc: fourcc, bytesPerLine: width * 2, sizeImage: width * height * 2)
        case V4L2FourCC.mjpeg:
            return V4L2PixFormat(width: width, height: height, fourcc: fourcc, bytesPerLine: 0, sizeImage: width * height * 2)
        default:
            let chroma = 2 * ((width + 1) / 2) * ((height + 1) / 2)
            return V4L2PixFormat(width: width, height: height, fourcc: fourcc, bytesPerLine: width,
                                 sizeImage: width * height + chroma)
        }
    }

    private func recordedFormat(_ fourcc: UInt32) -> V4L2Recording.Format? {
        recording.formats.first { V4L2FourCC.code($0.fourcc) == fourcc }
    }

    func queryCapability() throws(V4L2Error) -> V4L2Capability {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_QUERYCAP")
            return V4L2Capability(driver: recording.driver, card: recording.card, busInfo: recording.busInfo,
                                  capabilities: UInt32(recording.metadataOnly == true ? CV4L2_CAP_META_CAPTURE : CV4L2_CAP_VIDEO_CAPTURE)
                                      | UInt32(CV4L2_CAP_STREAMING))
        }
    }

    func enumFormat(index: Int) throws(V4L2Error) -> V4L2FormatDescription? {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_ENUM_FMT")
            guard index >= 0, index < recording.formats.count,
                  let code = V4L2FourCC.code(recording.formats[index].fourcc) else { return nil }
            return V4L2FormatDescription(fourcc: code, description: recording.formats[index].description)
        }
    }

    func enumFrameSize(fourcc: UInt32, index: Int) throws(V4L2Error) -> V4L2FrameSize? {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_ENUM_FRAMESIZES")
            guard let f = recordedFormat(fourcc) else { return nil }
            if let s = f.stepwise {
                return index == 0 ? .stepwise(minWidth: s.minWidth, maxWidth: s.maxWidth, stepWidth: s.stepWidth,
                                              minHeight: s.minHeight, maxHeight: s.maxHeight, stepHeight: s.stepHeight) : nil
            }
            guard let sizes = f.sizes, index >= 0, index < sizes.count else { return nil }
            return .discrete(width: sizes[index].width, height: sizes[index].height)
        }
    }

    func enumFrameInterval(fourcc: UInt32, width: Int, height: Int, index: Int) throws(V4L2Error) -> V4L2FrameInterval? {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_ENUM_FRAMEINTERVALS")
            guard let f = recordedFormat(fourcc) else { return nil }
            if let s = f.stepwise {
                guard index == 0, (s.minWidth...s.maxWidth).contains(width), (s.minHeight...s.maxHeight).contains(height),
                      let lo = V4L2Recording.fraction(s.minInterval), let hi = V4L2Recording.fraction(s.maxInterval) else { return nil }
                return .stepwise(min: lo, max: hi, step: V4L2Fraction(1, 1))
            }
            guard let size = f.sizes?.first(where: { $0.width == width && $0.height == height }) else { return nil }
            if let list = size.intervals {
                guard index >= 0, index < list.count, let fr = V4L2Recording.fraction(list[index]) else { return nil }
                return .discrete(fr)
            }
            guard index == 0, let lo = size.minInterval.flatMap(V4L2Recording.fraction),
                  let hi = size.maxInterval.flatMap(V4L2Recording.fraction) else { return nil }
            return .stepwise(min: lo, max: hi, step: V4L2Fraction(1, 1))
        }
    }

    func getFormat() throws(V4L2Error) -> V4L2PixFormat {
        try locked { () throws(V4L2Error) in try alive("VIDIOC_G_FMT"); return format }
    }

    func setFormat(_ requested: V4L2PixFormat, by handle: ObjectIdentifier) throws(V4L2Error) -> V4L2PixFormat {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_S_FMT")
            if let owner, owner != handle || !buffers.isEmpty { throw V4L2Error(EBUSY, "VIDIOC_S_FMT") }
            // Unknown formats become the first one, as drivers do.
            let f = recordedFormat(requested.fourcc) ?? recording.formats[0]
            let code = V4L2FourCC.code(f.fourcc) ?? V4L2FourCC.yuyv
            var w = requested.width, h = requested.height
            if let s = f.stepwise {
                func snap(_ v: Int, _ lo: Int, _ hi: Int, _ step: Int) -> Int {
                    let c = min(max(v, lo), hi)
                    return min(hi, lo + ((c - lo + step / 2) / max(step, 1)) * max(step, 1))
                }
                w = snap(w, s.minWidth, s.maxWidth, s.stepWidth)
                h = snap(h, s.minHeight, s.maxHeight, s.stepHeight)
            } else if let best = f.sizes?.min(by: { abs($0.width - w) + abs($0.height - h) < abs($1.width - w) + abs($1.height - h) }) {
                w = best.width; h = best.height
            }
            format = RecordedV4L2Camera.pix(fourcc: code, width: w, height: h)
            // A new size resets the interval to the fastest one it has.
            interval = intervals(for: format).map { $0.fps }.max().map { V4L2Fraction(fps: $0) } ?? V4L2Fraction(1, 30)
            return format
        }
    }

    /// Allowed intervals of a format as (min, max) fps pairs.
    private func intervals(for pix: V4L2PixFormat) -> [V4L2Fraction] {
        guard let f = recordedFormat(pix.fourcc) else { return [] }
        if let s = f.stepwise {
            return [s.minInterval, s.maxInterval].compactMap(V4L2Recording.fraction)
        }
        guard let size = f.sizes?.first(where: { $0.width == pix.width && $0.height == pix.height }) else { return [] }
        if let list = size.intervals { return list.compactMap(V4L2Recording.fraction) }
        return [size.minInterval, size.maxInterval].compactMap { $0.flatMap(V4L2Recording.fraction) }
    }

    private func isContinuous(_ pix: V4L2PixFormat) -> Bool {
        guard let f = recordedFormat(pix.fourcc) else { return false }
        if f.stepwise != nil { return true }
        return f.sizes?.first(where: { $0.width == pix.width && $0.height == pix.height })?.intervals == nil
    }

    func getFrameInterval() throws(V4L2Error) -> V4L2Fraction? {
        try locked { () throws(V4L2Error) in try alive("VIDIOC_G_PARM"); return interval }
    }

    func setFrameInterval(_ requested: V4L2Fraction) throws(V4L2Error) -> V4L2Fraction {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_S_PARM")
            if streaming, recording.sParmWhileStreaming == "EBUSY" { throw V4L2Error(EBUSY, "VIDIOC_S_PARM") }
            let options = intervals(for: format)
            guard !options.isEmpty, requested.numerator > 0, requested.denominator > 0 else { return interval }
            if isContinuous(format) {
                let fps = min(max(requested.fps, options.map(\.fps).min() ?? 1), options.map(\.fps).max() ?? 30)
                interval = V4L2Fraction(fps: fps)
            } else if let best = options.min(by: { abs($0.fps - requested.fps) < abs($1.fps - requested.fps) }) {
                interval = best
            }
            return interval
        }
    }

    private func control(_ id: UInt32) -> V4L2Recording.Control? {
        recording.controls.first { V4L2Recording.controlID($0.id) == id }
    }

    private static func type(_ s: String) -> V4L2ControlType {
        switch s {
        case "int": return .integer
        case "bool": return .boolean
        case "menu": return .menu
        case "intmenu": return .integerMenu
        case "button": return .button
        default: return .other(0)
        }
    }

    private func isActive(_ c: V4L2Recording.Control) -> Bool {
        guard let a = c.activeWhen, let master = V4L2Recording.controlID(a.id) else { return true }
        return a.values.contains(values[master] ?? 0)
    }

    func queryControl(id: UInt32) throws(V4L2Error) -> V4L2ControlInfo? {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_QUERYCTRL")
            let next = id & UInt32(CV4L2_CTRL_FLAG_NEXT_CTRL) != 0
            let base = id & ~UInt32(CV4L2_CTRL_FLAG_NEXT_CTRL)
            let sorted = recording.controls.compactMap { c in V4L2Recording.controlID(c.id).map { ($0, c) } }.sorted { $0.0 < $1.0 }
            guard let (cid, c) = next ? sorted.first(where: { $0.0 > base }) : sorted.first(where: { $0.0 == base }) else { return nil }
            var flags: UInt32 = 0
            if c.readOnly == true { flags |= UInt32(CV4L2_CTRL_FLAG_READ_ONLY) }
            if !isActive(c) { flags |= UInt32(CV4L2_CTRL_FLAG_INACTIVE) }
            if c.type == "button" { flags |= UInt32(CV4L2_CTRL_FLAG_WRITE_ONLY) }
            return V4L2ControlInfo(id: cid, name: c.name, type: Self.type(c.type), minimum: c.min, maximum: c.max,
                                   step: c.step, defaultValue: c.default, flags: flags)
        }
    }

    func queryMenu(id: UInt32, index: Int) throws(V4L2Error) -> V4L2MenuItem? {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_QUERYMENU")
            guard let c = control(id), let item = c.menu?.first(where: { $0.index == index }) else { return nil }
            return V4L2MenuItem(index: index, name: item.name, value: item.value)
        }
    }

    func getControl(id: UInt32) throws(V4L2Error) -> Int32 {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_G_CTRL")
            guard let c = control(id) else { throw V4L2Error(EINVAL, "VIDIOC_G_CTRL") }
            if c.type == "button" { throw V4L2Error(EACCES, "VIDIOC_G_CTRL") }
            return values[id] ?? 0
        }
    }

    func setControl(id: UInt32, value: Int32) throws(V4L2Error) {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_S_CTRL")
            guard let c = control(id) else { throw V4L2Error(EINVAL, "VIDIOC_S_CTRL") }
            if c.readOnly == true { throw V4L2Error(EACCES, "VIDIOC_S_CTRL") }
            if !isActive(c) { throw V4L2Error(V4L2Recording.errno(c.inactiveError), "VIDIOC_S_CTRL") }
            let v = Int64(value)
            switch c.type {
            case "button":
                return
            case "bool":
                values[id] = value != 0 ? 1 : 0
            case "menu", "intmenu":
                guard v >= c.min, v <= c.max else { throw V4L2Error(ERANGE, "VIDIOC_S_CTRL") }
                guard c.menu?.contains(where: { $0.index == Int(v) }) ?? false else { throw V4L2Error(EINVAL, "VIDIOC_S_CTRL") }
                values[id] = value
            default:
                // The kernel's control framework: clamp, then round to the step from the minimum.
                let step = max(c.step, 1)
                let clamped = min(max(v, c.min), c.max)
                let rounded = min(c.max, c.min + ((clamped - c.min + step / 2) / step) * step)
                values[id] = Int32(clamping: rounded)
            }
        }
    }

    func requestBuffers(count: Int, by handle: ObjectIdentifier) throws(V4L2Error) -> Int {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_REQBUFS")
            if let owner, owner != handle { throw V4L2Error(EBUSY, "VIDIOC_REQBUFS") }
            if streaming { throw V4L2Error(EBUSY, "VIDIOC_REQBUFS") }
            for b in buffers { b.deallocate() }
            buffers = []
            incoming = []
            done = []
            guard count > 0 else { owner = nil; return 0 }
            let n = min(max(count, 2), 8)
            buffers = (0..<n).map { _ in
                let b = UnsafeMutableRawBufferPointer.allocate(byteCount: format.sizeImage, alignment: 64)
                b.initializeMemory(as: UInt8.self, repeating: 0)
                return b
            }
            owner = handle
            return n
        }
    }

    func mapBuffer(index: Int, by handle: ObjectIdentifier) throws(V4L2Error) -> UnsafeMutableRawBufferPointer {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_QUERYBUF")
            guard owner == handle, index >= 0, index < buffers.count else { throw V4L2Error(EINVAL, "VIDIOC_QUERYBUF") }
            return buffers[index]
        }
    }

    func queueBuffer(index: Int, by handle: ObjectIdentifier) throws(V4L2Error) {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_QBUF")
            guard owner == handle, index >= 0, index < buffers.count, !incoming.contains(index),
                  !done.contains(where: { $0.index == index }) else { throw V4L2Error(EINVAL, "VIDIOC_QBUF") }
            incoming.append(index)
            queueLog.append(index)
            condition.broadcast()
        }
    }

    /// Fills the oldest queued buffer if streaming and the frame budget allows (lock held).
    private func produce() {
        guard streaming, !incoming.isEmpty, frameBudget.map({ $0 > 0 }) ?? true else { return }
        let index = incoming.removeFirst()
        frameBudget = frameBudget.map { $0 - 1 }
        let bytes = fill(buffers[index], sequence: sequence)
        done.append((index, bytes, sequence, cv4l2_monotonic_ns()))
        sequence &+= 1
    }

    func dequeueBuffer(by handle: ObjectIdentifier) throws(V4L2Error) -> V4L2DequeuedBuffer {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_DQBUF")
            guard owner == handle, streaming else { throw V4L2Error(EINVAL, "VIDIOC_DQBUF") }
            if done.isEmpty { produce() }
            guard !done.isEmpty else { throw V4L2Error(EAGAIN, "VIDIOC_DQBUF") }
            let d = done.removeFirst()
            dequeueLog.append((d.index, d.sequence))
            return V4L2DequeuedBuffer(index: d.index, bytesUsed: d.bytes, sequence: d.sequence, timestampNs: d.ts)
        }
    }

    func streamOn(by handle: ObjectIdentifier) throws(V4L2Error) {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_STREAMON")
            guard owner == handle, !buffers.isEmpty else { throw V4L2Error(EINVAL, "VIDIOC_STREAMON") }
            if !streaming { streaming = true; sequence = 0 }
            condition.broadcast()
        }
    }

    func streamOff(by handle: ObjectIdentifier) throws(V4L2Error) {
        try locked { () throws(V4L2Error) in
            try alive("VIDIOC_STREAMOFF")
            guard owner == handle else { throw V4L2Error(EINVAL, "VIDIOC_STREAMOFF") }
            streaming = false
            incoming = []
            done = []
        }
    }

    func waitForFrame(timeoutMs: Int) throws(V4L2Error) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Double(max(timeoutMs, 0)) / 1000)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if interrupted { interrupted = false; return false }
            if vanished { return true }   // like POLLERR: the DQBUF that follows reports ENODEV
            if done.isEmpty { produce() }
            if !done.isEmpty { return true }
            if !condition.wait(until: deadline) { return false }
        }
    }

    func interruptWait() { locked { interrupted = true; condition.broadcast() } }

    func close(_ handle: ObjectIdentifier) {
        locked {
            guard owner == handle else { return }
            streaming = false
            for b in buffers { b.deallocate() }
            buffers = []
            incoming = []
            done = []
            owner = nil
        }
    }

    // MARK: Pictures

    /// Writes frame `sequence` into `buffer`; returns bytesused. Raw formats carry the sequence
    /// number little-endian in the first four luma samples.
    private func fill(_ buffer: UnsafeMutableRawBufferPointer, sequence: UInt32) -> Int {
        if corruptSequences.contains(sequence) {
            let n = min(buffer.count, 4096)
            for i in 0..<n { buffer[i] = UInt8(truncatingIfNeeded: i &* 131 &+ 7) }
            buffer[0] = 0xFF; if n > 1 { buffer[1] = 0xD8 }   // starts like a JPEG, then garbage
            return n
        }
        let picture = self.picture(format)
        let n = min(picture.count, buffer.count)
        picture.withUnsafeBytes { src in
            if let s = src.baseAddress, let d = buffer.baseAddress { d.copyMemory(from: s, byteCount: n) }
        }
        if format.fourcc != V4L2FourCC.mjpeg, n >= 8 {
            let step = format.fourcc == V4L2FourCC.yuyv ? 2 : 1   // luma samples are every other byte in YUYV
            for i in 0..<4 { buffer[i * step] = UInt8((sequence >> (8 * UInt32(i))) & 0xFF) }
        }
        return n
    }

    /// The test picture of a format (cached): see `RecordedV4L2Picture`.
    private func picture(_ pix: V4L2PixFormat) -> [UInt8] {
        let key = "\(pix.fourcc) \(pix.width)x\(pix.height)"
        if let p = pictures[key] { return p }
        let p = shown.map { RecordedV4L2Picture.bytes(of: $0, pix) } ?? RecordedV4L2Picture.bytes(pix)
        pictures[key] = p
        return p
    }
}

/// The picture a recorded camera streams. Raw formats: luma ramps left to right
/// (16 + 219·x/(w−1)), U ramps top to bottom (64 + 128·y/h), V is 160 everywhere. MJPEG: four
/// quadrants, red top left, green top right, blue bottom left, white bottom right, encoded by
/// libjpeg-turbo.
public enum RecordedV4L2Picture {
    public static func luma(x: Int, width: Int) -> UInt8 { UInt8(16 + 219 * x / max(width - 1, 1)) }
    public static func u(y: Int, height: Int) -> UInt8 { UInt8(64 + 128 * y / max(height, 1)) }
    public static let v: UInt8 = 160
    public static let quadrants: [(r: UInt8, g: UInt8, b: UInt8)] = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)]

    /// Where `show(_:)` puts a `width`×`height` picture in a frame of the format's size: centred,
    /// as large as fits, black bars on two sides.
    public static func placement(width: Int, height: Int, in pix: V4L2PixFormat) -> PixelRect {
        let r = CameraGeometry.zoomedRect(videoWidth: Double(width), videoHeight: Double(height),
                                          in: CameraGeometry.Rect(x: 0, y: 0, width: Double(pix.width), height: Double(pix.height)),
                                          scaleToFit: true)
        let w = max(2, Int(r.width.rounded()) & ~1), h = max(2, Int(r.height.rounded()) & ~1)
        return PixelRect(x: ((pix.width - w) / 2) & ~1, y: ((pix.height - h) / 2) & ~1, width: min(w, pix.width), height: min(h, pix.height))
    }

    /// `frame` as I420 of the format's size, fitted in (`placement`) with black around it.
    public static func fitted(_ frame: VideoFrame, in pix: V4L2PixFormat) -> VideoFrameBuffer {
        let at = placement(width: frame.width, height: frame.height, in: pix)
        let canvas = VideoFrameBuffer.filledI420(width: pix.width, height: pix.height, y: 16, u: 128, v: 128)
        let fitted = frame.buffer.converted(to: .i420).scaled(width: at.width, height: at.height)
        _ = I420Copy(fitted.planePointer(0), Int32(fitted.strides[0]), fitted.planePointer(1), Int32(fitted.strides[1]),
                     fitted.planePointer(2), Int32(fitted.strides[2]),
                     canvas.planePointer(0) + at.y * canvas.strides[0] + at.x, Int32(canvas.strides[0]),
                     canvas.planePointer(1) + at.y / 2 * canvas.strides[1] + at.x / 2, Int32(canvas.strides[1]),
                     canvas.planePointer(2) + at.y / 2 * canvas.strides[2] + at.x / 2, Int32(canvas.strides[2]),
                     Int32(at.width), Int32(at.height))
        return canvas
    }

    /// `frame` fitted into the format's size and laid out as the driver delivers it.
    static func bytes(of frame: VideoFrame, _ pix: V4L2PixFormat) -> [UInt8] {
        let w = pix.width, h = pix.height, cw = (w + 1) / 2, ch = (h + 1) / 2
        let canvas = fitted(frame, in: pix)
        let y = canvas.planePointer(0), u = canvas.planePointer(1), v = canvas.planePointer(2)
        let sy = Int32(canvas.strides[0]), su = Int32(canvas.strides[1]), sv = Int32(canvas.strides[2])
        switch pix.fourcc {
        case V4L2FourCC.mjpeg:
            return (try? JPEGEncoder.encode(VideoFrame(buffer: canvas, timestampNs: 0), quality: 90)) ?? []
        case V4L2FourCC.yuyv:
            var out = [UInt8](repeating: 0, count: w * h * 2)
            out.withUnsafeMutableBufferPointer { o in
                if let d = o.baseAddress { _ = I420ToYUY2(y, sy, u, su, v, sv, d, Int32(2 * w), Int32(w), Int32(h)) }
            }
            return out
        default:   // NV12 and YU12: Y plane, then chroma
            var out = [UInt8](repeating: 0, count: w * h + 2 * cw * ch)
            out.withUnsafeMutableBufferPointer { o in
                guard let d = o.baseAddress else { return }
                if pix.fourcc == V4L2FourCC.nv12 {
                    _ = I420ToNV12(y, sy, u, su, v, sv, d, Int32(w), d + w * h, Int32(2 * cw), Int32(w), Int32(h))
                } else {
                    _ = I420Copy(y, sy, u, su, v, sv, d, Int32(w), d + w * h, Int32(cw), d + w * h + cw * ch, Int32(cw), Int32(w), Int32(h))
                }
            }
            return out
        }
    }

    static func bytes(_ pix: V4L2PixFormat) -> [UInt8] {
        let w = pix.width, h = pix.height, cw = (w + 1) / 2, ch = (h + 1) / 2
        switch pix.fourcc {
        case V4L2FourCC.yuyv:
            var out = [UInt8](repeating: 0, count: w * h * 2)
            for y in 0..<h {
                for x in 0..<w {
                    out[y * w * 2 + 2 * x] = luma(x: x, width: w)
                    out[y * w * 2 + 2 * x + 1] = x % 2 == 0 ? u(y: y, height: h) : v
                }
            }
            return out
        case V4L2FourCC.mjpeg:
            let b = VideoFrameBuffer(format: .bgra, width: w, height: h)
            for y in 0..<h {
                for x in 0..<w {
                    let q = quadrants[(y < h / 2 ? 0 : 2) + (x < w / 2 ? 0 : 1)], p = y * b.strides[0] + 4 * x
                    b.planePointer(0)[p] = q.b; b.planePointer(0)[p + 1] = q.g; b.planePointer(0)[p + 2] = q.r; b.planePointer(0)[p + 3] = 255
                }
            }
            return (try? JPEGEncoder.encode(VideoFrame(buffer: b, timestampNs: 0), quality: 90)) ?? []
        default:   // NV12 and YU12: Y plane, then chroma
            var out = [UInt8](repeating: 0, count: w * h + 2 * cw * ch)
            for y in 0..<h { for x in 0..<w { out[y * w + x] = luma(x: x, width: w) } }
            let nv12 = pix.fourcc == V4L2FourCC.nv12
            for y in 0..<ch {
                let uy = u(y: 2 * y, height: h)
                for x in 0..<cw {
                    if nv12 {
                        out[w * h + y * 2 * cw + 2 * x] = uy
                        out[w * h + y * 2 * cw + 2 * x + 1] = v
                    } else {
                        out[w * h + y * cw + x] = uy
                        out[w * h + cw * ch + y * cw + x] = v
                    }
                }
            }
            return out
        }
    }
}

/// One open handle on a `RecordedV4L2Camera`.
public final class RecordedV4L2Device: V4L2DeviceIO, @unchecked Sendable {
    // @unchecked: immutable apart from `closed`, which only the owner's close() sets.
    public let camera: RecordedV4L2Camera
    public var path: String { camera.path }
    private var closed = false
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    init(camera: RecordedV4L2Camera) { self.camera = camera }

    private func check(_ op: String) throws(V4L2Error) {
        if closed { throw V4L2Error(EBADF, op) }
    }

    public func queryCapability() throws(V4L2Error) -> V4L2Capability { try check("VIDIOC_QUERYCAP"); return try camera.queryCapability() }
    public func enumFormat(index: Int) throws(V4L2Error) -> V4L2FormatDescription? { try check("VIDIOC_ENUM_FMT"); return try camera.enumFormat(index: index) }
    public func enumFrameSize(fourcc: UInt32, index: Int) throws(V4L2Error) -> V4L2FrameSize? {
        try check("VIDIOC_ENUM_FRAMESIZES"); return try camera.enumFrameSize(fourcc: fourcc, index: index)
    }
    public func enumFrameInterval(fourcc: UInt32, width: Int, height: Int, index: Int) throws(V4L2Error) -> V4L2FrameInterval? {
        try check("VIDIOC_ENUM_FRAMEINTERVALS")
        return try camera.enumFrameInterval(fourcc: fourcc, width: width, height: height, index: index)
    }
    public func getFormat() throws(V4L2Error) -> V4L2PixFormat { try check("VIDIOC_G_FMT"); return try camera.getFormat() }
    public func setFormat(_ format: V4L2PixFormat) throws(V4L2Error) -> V4L2PixFormat {
        try check("VIDIOC_S_FMT"); return try camera.setFormat(format, by: id)
    }
    public func getFrameInterval() throws(V4L2Error) -> V4L2Fraction? { try check("VIDIOC_G_PARM"); return try camera.getFrameInterval() }
    public func setFrameInterval(_ interval: V4L2Fraction) throws(V4L2Error) -> V4L2Fraction {
        try check("VIDIOC_S_PARM"); return try camera.setFrameInterval(interval)
    }
    public func queryControl(id: UInt32) throws(V4L2Error) -> V4L2ControlInfo? { try check("VIDIOC_QUERYCTRL"); return try camera.queryControl(id: id) }
    public func queryMenu(id: UInt32, index: Int) throws(V4L2Error) -> V4L2MenuItem? {
        try check("VIDIOC_QUERYMENU"); return try camera.queryMenu(id: id, index: index)
    }
    public func getControl(id: UInt32) throws(V4L2Error) -> Int32 { try check("VIDIOC_G_CTRL"); return try camera.getControl(id: id) }
    public func setControl(id: UInt32, value: Int32) throws(V4L2Error) { try check("VIDIOC_S_CTRL"); try camera.setControl(id: id, value: value) }
    public func requestBuffers(count: Int) throws(V4L2Error) -> Int {
        try check("VIDIOC_REQBUFS"); return try camera.requestBuffers(count: count, by: id)
    }
    public func mapBuffer(index: Int) throws(V4L2Error) -> UnsafeMutableRawBufferPointer {
        try check("VIDIOC_QUERYBUF"); return try camera.mapBuffer(index: index, by: id)
    }
    public func unmapBuffer(_ memory: UnsafeMutableRawBufferPointer) {}
    public func queueBuffer(index: Int) throws(V4L2Error) { try check("VIDIOC_QBUF"); try camera.queueBuffer(index: index, by: id) }
    public func dequeueBuffer() throws(V4L2Error) -> V4L2DequeuedBuffer { try check("VIDIOC_DQBUF"); return try camera.dequeueBuffer(by: id) }
    public func streamOn() throws(V4L2Error) { try check("VIDIOC_STREAMON"); try camera.streamOn(by: id) }
    public func streamOff() throws(V4L2Error) { try check("VIDIOC_STREAMOFF"); try camera.streamOff(by: id) }
    public func waitForFrame(timeoutMs: Int) throws(V4L2Error) -> Bool { try check("poll"); return try camera.waitForFrame(timeoutMs: timeoutMs) }
    public func interruptWait() { camera.interruptWait() }
    public func close() {
        guard !closed else { return }
        closed = true
        camera.close(id)
    }
}
