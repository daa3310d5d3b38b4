import CV4L2

/// A failed V4L2 call: which one and its errno.
public struct V4L2Error: Error, Sendable, Equatable, CustomStringConvertible {
    public var errno: Int32
    public var operation: String
    public init(_ errno: Int32, _ operation: String) {
        self.errno = errno
        self.operation = operation
    }
    public var text: String { V4L2Error.text(errno) }
    public var description: String { "\(operation): \(text) (errno \(errno))" }

    /// strerror text of an errno.
    public static func text(_ errno: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        cv4l2_strerror(errno, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// VIDIOC_QUERYCAP: who the driver is and what the node can do (device_caps when the driver
/// reports them, the whole device's capabilities otherwise).
public struct V4L2Capability: Sendable, Hashable, Codable {
    public var driver: String
    public var card: String
    public var busInfo: String
    public var capabilities: UInt32
    public init(driver: String, card: String, busInfo: String, capabilities: UInt32) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.capabilities = capabilities
    }
    /// A node we can stream video from (UVC cameras also expose metadata-only nodes).
    public var canStreamVideo: Bool {
        capabilities & UInt32(CV4L2_CAP_VIDEO_CAPTURE) != 0 && capabilities & UInt32(CV4L2_CAP_STREAMING) != 0
    }
}

/// A V4L2 fraction (frame intervals are seconds per frame).
public struct V4L2Fraction: Sendable, Hashable, Codable, CustomStringConvertible {
    public var numerator: UInt32
    public var denominator: UInt32
    public init(_ numerator: UInt32, _ denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }
    /// Frames per second of this frame interval.
    public var fps: Double { numerator == 0 ? 0 : Double(denominator) / Double(numerator) }
    /// The interval of `fps` frames per second (1/30 for 30, 2/15 for 7.5).
    public init(fps: Double) {
        let den = UInt32(max(1, min(1_000_000_000, (fps * 1000).rounded())))
        var a: UInt32 = 1000, b = den
        while b != 0 { (a, b) = (b, a % b) }
        self.init(1000 / a, den / a)
    }
    public var description: String { "\(numerator)/\(denominator)" }
}

/// VIDIOC_ENUM_FMT entry.
public struct V4L2FormatDescription: Sendable, Hashable {
    public var fourcc: UInt32
    public var description: String
    public init(fourcc: UInt32, description: String) {
        self.fourcc = fourcc
        self.description = description
    }
}

/// VIDIOC_ENUM_FRAMESIZES entry.
public enum V4L2FrameSize: Sendable, Hashable {
    case discrete(width: Int, height: Int)
    /// Continuous is stepwise with steps of 1.
    case stepwise(minWidth: Int, maxWidth: Int, stepWidth: Int, minHeight: Int, maxHeight: Int, stepHeight: Int)
}

/// VIDIOC_ENUM_FRAMEINTERVALS entry.
public enum V4L2FrameInterval: Sendable, Hashable {
    case discrete(V4L2Fraction)
    /// Continuous is stepwise with a step of 1/∞ (V4L2 reports step 1/1).
    case stepwise(min: V4L2Fraction, max: V4L2Fraction, step: V4L2Fraction)
}

/// The format part of VIDIOC_G_FMT / S_FMT for single-planar capture.
public struct V4L2PixFormat: Sendable, Hashable {
    public var width: Int
    public var height: Int
    public var fourcc: UInt32
    public var bytesPerLine: Int
    public var sizeImage: Int
    public init(width: Int, height: Int, fourcc: UInt32, bytesPerLine: Int = 0, sizeImage: Int = 0) {
        self.width = width
        self.height = height
        self.fourcc = fourcc
        self.bytesPerLine = bytesPerLine
        self.sizeImage = sizeImage
    }
}

public enum V4L2ControlType: Sendable, Hashable {
    case integer, boolean, menu, integerMenu, button, other(UInt32)
    init(raw: UInt32) {
        switch Int(raw) {
        case Int(CV4L2_CTRL_TYPE_INTEGER): self = .integer
        case Int(CV4L2_CTRL_TYPE_BOOLEAN): self = .boolean
        case Int(CV4L2_CTRL_TYPE_MENU): self = .menu
        case Int(CV4L2_CTRL_TYPE_INTEGER_MENU): self = .integerMenu
        case Int(CV4L2_CTRL_TYPE_BUTTON): self = .button
        default: self = .other(raw)
        }
    }
}

/// VIDIOC_QUERYCTRL result.
public struct V4L2ControlInfo: Sendable, Hashable {
    public var id: UInt32
    public var name: String
    public var type: V4L2ControlType
    public var minimum: Int64
    public var maximum: Int64
    public var step: Int64
    public var defaultValue: Int64
    public var flags: UInt32
    public init(id: UInt32, name: String, type: V4L2ControlType, minimum: Int64, maximum: Int64, step: Int64,
                defaultValue: Int64, flags: UInt32 = 0) {
        self.id = id
        self.name = name
        self.type = type
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.defaultValue = defaultValue
        self.flags = flags
    }
    public var isDisabled: Bool { flags & UInt32(CV4L2_CTRL_FLAG_DISABLED) != 0 }
}

/// VIDIOC_QUERYMENU result: a name for menus, a value for integer menus.
public struct V4L2MenuItem: Sendable, Hashable {
    public var index: Int
    public var name: String?
    public var value: Int64?
    public init(index: Int, name: String? = nil, value: Int64? = nil) {
        self.index = index
        self.name = name
        self.value = value
    }
}

/// VIDIOC_DQBUF result.
public struct V4L2DequeuedBuffer: Sendable, Hashable {
    public var index: Int
    public var bytesUsed: Int
    public var sequence: UInt32
    /// The driver's capture timestamp (CLOCK_MONOTONIC), nil when it uses another clock.
    public var timestampNs: Int64?
    /// V4L2_BUF_FLAG_ERROR: the data may be corrupt.
    public var hasError: Bool
    public init(index: Int, bytesUsed: Int, sequence: UInt32, timestampNs: Int64?, hasError: Bool = false) {
        self.index = index
        self.bytesUsed = bytesUsed
        self.sequence = sequence
        self.timestampNs = timestampNs
        self.hasError = hasError
    }
}

/// The ioctls a camera needs, over one open V4L2 node: the real kernel (`V4L2SystemDevice`) or
/// a recorded description of one (`RecordedV4L2Device`). Errors carry errno. Enumerations
/// answer nil past their last index (the kernel's EINVAL).
public protocol V4L2DeviceIO: AnyObject, Sendable {
    var path: String { get }
    func queryCapability() throws(V4L2Error) -> V4L2Capability
    func enumFormat(index: Int) throws(V4L2Error) -> V4L2FormatDescription?
    func enumFrameSize(fourcc: UInt32, index: Int) throws(V4L2Error) -> V4L2FrameSize?
    func enumFrameInterval(fourcc: UInt32, width: Int, height: Int, index: Int) throws(V4L2Error) -> V4L2FrameInterval?
    func getFormat() throws(V4L2Error) -> V4L2PixFormat
    /// S_FMT; the driver may adjust size and format: the returned one is the truth.
    func setFormat(_ format: V4L2PixFormat) throws(V4L2Error) -> V4L2PixFormat
    /// G_PARM: the frame interval now, nil when the driver cannot set one.
    func getFrameInterval() throws(V4L2Error) -> V4L2Fraction?
    /// S_PARM: returns the interval the driver chose.
    func setFrameInterval(_ interval: V4L2Fraction) throws(V4L2Error) -> V4L2Fraction
    /// QUERYCTRL of `id` (which may carry V4L2_CTRL_FLAG_NEXT_CTRL); nil when there is none.
    func queryControl(id: UInt32) throws(V4L2Error) -> V4L2ControlInfo?
    func queryMenu(id: UInt32, index: Int) throws(V4L2Error) -> V4L2MenuItem?
    func getControl(id: UInt32) throws(V4L2Error) -> Int32
    func setControl(id: UInt32, value: Int32) throws(V4L2Error)
    /// REQBUFS with MMAP memory; returns how many buffers the driver allocated.
    func requestBuffers(count: Int) throws(V4L2Error) -> Int
    /// QUERYBUF + mmap: the buffer's memory.
    func mapBuffer(index: Int) throws(V4L2Error) -> UnsafeMutableRawBufferPointer
    func unmapBuffer(_ memory: UnsafeMutableRawBufferPointer)
    func queueBuffer(index: Int) throws(V4L2Error)
    /// DQBUF; EAGAIN when no filled buffer waits.
    func dequeueBuffer() throws(V4L2Error) -> V4L2DequeuedBuffer
    func streamOn() throws(V4L2Error)
    func streamOff() throws(V4L2Error)
    /// Waits up to `timeoutMs` for a filled buffer (or an error a DQBUF will report); false on
    /// timeout or when `interruptWait` was called.
    func waitForFrame(timeoutMs: Int) throws(V4L2Error) -> Bool
    /// Makes a pending or the next `waitForFrame` return at once.
    func interruptWait()
    func close()
}

extension V4L2DeviceIO {
    public func formats() throws(V4L2Error) -> [V4L2FormatDescription] {
        var out: [V4L2FormatDescription] = []
        while out.count < 256, let f = try enumFormat(index: out.count) { out.append(f) }
        return out
    }

    public func frameSizes(fourcc: UInt32) throws(V4L2Error) -> [V4L2FrameSize] {
        var out: [V4L2FrameSize] = []
        while out.count < 256, let s = try enumFrameSize(fourcc: fourcc, index: out.count) { out.append(s) }
        return out
    }

    public func frameIntervals(fourcc: UInt32, width: Int, height: Int) throws(V4L2Error) -> [V4L2FrameInterval] {
        var out: [V4L2FrameInterval] = []
        while out.count < 256, let i = try enumFrameInterval(fourcc: fourcc, width: width, height: height, index: out.count) {
            out.append(i)
        }
        return out
    }

    /// Every control, walked with V4L2_CTRL_FLAG_NEXT_CTRL (class headers and disabled
    /// controls left out).
    public func controls() throws(V4L2Error) -> [V4L2ControlInfo] {
        var out: [V4L2ControlInfo] = []
        var id: UInt32 = 0
        while out.count < 1024, let c = try queryControl(id: id | UInt32(CV4L2_CTRL_FLAG_NEXT_CTRL)) {
            if c.id <= id & ~UInt32(CV4L2_CTRL_FLAG_NEXT_CTRL) && id != 0 { break }   // a driver looping
            id = c.id
            if case .other(let t) = c.type, t == UInt32(CV4L2_CTRL_TYPE_CTRL_CLASS) { continue }
            if !c.isDisabled { out.append(c) }
        }
        return out
    }

    /// The menu items of a (integer) menu control (skipping holes, as drivers have).
    public func menuItems(_ control: V4L2ControlInfo) throws(V4L2Error) -> [V4L2MenuItem] {
        guard control.type == .menu || control.type == .integerMenu, control.minimum >= 0,
              control.maximum - control.minimum < 256 else { return [] }
        var out: [V4L2MenuItem] = []
        for i in control.minimum...control.maximum {
            if let item = try queryMenu(id: control.id, index: Int(i)) { out.append(item) }
        }
        return out
    }
}

/// FourCC helpers.
public enum V4L2FourCC {
    public static let yuyv = UInt32(CV4L2_PIX_FMT_YUYV)
    public static let nv12 = UInt32(CV4L2_PIX_FMT_NV12)
    public static let yu12 = UInt32(CV4L2_PIX_FMT_YUV420)
    public static let mjpeg = UInt32(CV4L2_PIX_FMT_MJPEG)

    /// "YUYV" → its fourcc; nil unless exactly four ASCII characters.
    public static func code(_ s: String) -> UInt32? {
        let b = Array(s.utf8)
        guard b.count == 4 else { return nil }
        return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }

    public static func string(_ code: UInt32) -> String {
        let b = (0..<4).map { UInt8((code >> (8 * $0)) & 0xFF) }
        return String(decoding: b.map { (32...126).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// The model's pixel format for a fourcc we can convert, nil for the rest.
    public static func pixelFormat(_ code: UInt32) -> CameraPixelFormat? {
        switch code {
        case yuyv: return .yuyv
        case nv12: return .nv12
        case yu12: return .i420
        case mjpeg: return .mjpeg
        default: return nil
        }
    }

    public static func code(for format: CameraPixelFormat) -> UInt32? {
        switch format {
        case .yuyv: return yuyv
        case .nv12: return nv12
        case .i420: return yu12
        case .mjpeg: return mjpeg
        case .bgra: return nil
        }
    }
}

/// Control ids the backend maps (V4L2_CID_*), for recordings and tests.
public enum V4L2ControlID {
    public static let gain = UInt32(CV4L2_CID_GAIN)
    public static let whiteBalanceAutomatic = UInt32(CV4L2_CID_AUTO_WHITE_BALANCE)
    public static let whiteBalanceTemperature = UInt32(CV4L2_CID_WHITE_BALANCE_TEMPERATURE)
    public static let autoExposure = UInt32(CV4L2_CID_EXPOSURE_AUTO)
    public static let exposureTimeAbsolute = UInt32(CV4L2_CID_EXPOSURE_ABSOLUTE)
    public static let focusAbsolute = UInt32(CV4L2_CID_FOCUS_ABSOLUTE)
    public static let focusAutomaticContinuous = UInt32(CV4L2_CID_FOCUS_AUTO)
    public static let autoFocusStart = UInt32(CV4L2_CID_AUTO_FOCUS_START)
    public static let zoomAbsolute = UInt32(CV4L2_CID_ZOOM_ABSOLUTE)
    public static let autoExposureBias = UInt32(CV4L2_CID_AUTO_EXPOSURE_BIAS)
    public static let isoSensitivity = UInt32(CV4L2_CID_ISO_SENSITIVITY)
    public static let isoSensitivityAuto = UInt32(CV4L2_CID_ISO_SENSITIVITY_AUTO)
    public static let flashLEDMode = UInt32(CV4L2_CID_FLASH_LED_MODE)
    public static let flashTorchIntensity = UInt32(CV4L2_CID_FLASH_TORCH_INTENSITY)
}
