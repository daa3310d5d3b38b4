import Locks

/// Pixel memory of one picture: planes in one aligned allocation. A buffer is written once by
/// whoever produces it and then only read (frames are shared by renderers and encoders), which
/// is why it can be `Sendable`. Pools hand out buffers again once nobody holds them.
public final class VideoFrameBuffer: @unchecked Sendable {
    // @unchecked: the memory is written only before the buffer is shared (producer side, or a
    // pool reusing a buffer it holds the only reference to) and read-only afterwards.
    public let format: PixelFormat
    public let width: Int
    public let height: Int
    /// Row stride of each plane in bytes.
    public let strides: [Int]
    /// Byte offset of each plane from `baseAddress`.
    public let offsets: [Int]
    public let byteCount: Int
    public let baseAddress: UnsafeMutableRawPointer

    /// The largest width, and the largest height, of a buffer: the one frame size limit. Every
    /// decoder, file reader, capturer, camera, converter and window checks a size it did not
    /// make (a bitstream, a file header, a driver, a caller) against it before it allocates, and
    /// refuses a larger one with an error that names the size. Strides and plane offsets of a
    /// 16384×16384 BGRA picture still fit libyuv's Int32 arguments.
    public static let maxDimension = 16384

    /// Whether `width`×`height` is a size a buffer takes: 1…`maxDimension` on each side.
    public static func isValidSize(width: Int, height: Int) -> Bool {
        (1...maxDimension).contains(width) && (1...maxDimension).contains(height)
    }

    /// `side` brought into `minimum`…`maxDimension`.
    public static func clampedDimension(_ side: Int, minimum: Int = 1) -> Int {
        min(max(side, minimum), maxDimension)
    }

    /// A buffer with tightly packed planes (strides rounded up to 32 bytes for SIMD code).
    public init(format: PixelFormat, width: Int, height: Int) {
        precondition(Self.isValidSize(width: width, height: height),
                     "frame size \(width)x\(height) out of range")   // callers validate untrusted sizes first
        self.format = format
        self.width = width
        self.height = height
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        func align(_ n: Int) -> Int { (n + 31) & ~31 }
        switch format {
        case .i420:
            strides = [align(width), align(cw), align(cw)]
            offsets = [0, strides[0] * height, strides[0] * height + strides[1] * ch]
            byteCount = offsets[2] + strides[2] * ch
        case .nv12VideoRange, .nv12FullRange:
            strides = [align(width), align(cw * 2)]
            offsets = [0, strides[0] * height]
            byteCount = offsets[1] + strides[1] * ch
        case .bgra:
            strides = [align(width * 4)]
            offsets = [0]
            byteCount = strides[0] * height
        }
        baseAddress = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 64)
        baseAddress.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
    }

    deinit { baseAddress.deallocate() }

    /// Plane `i` as raw memory (rows are `strides[i]` apart).
    public func plane(_ i: Int) -> UnsafeMutableRawBufferPointer {
        let rows = i == 0 ? height : (height + 1) / 2
        return UnsafeMutableRawBufferPointer(start: baseAddress + offsets[i], count: strides[i] * rows)
    }

    public func planePointer(_ i: Int) -> UnsafeMutablePointer<UInt8> {
        (baseAddress + offsets[i]).assumingMemoryBound(to: UInt8.self)
    }

    /// Width in pixels of plane `i` (chroma planes are half width; NV12's UV plane counts pairs).
    public func planeWidth(_ i: Int) -> Int { i == 0 ? width : (width + 1) / 2 }
    public func planeHeight(_ i: Int) -> Int { i == 0 ? height : (height + 1) / 2 }

    /// Luma sample at (x, y) for YUV formats (tests and pattern readers).
    public func luma(x: Int, y: Int) -> UInt8 {
        guard format != .bgra, x >= 0, y >= 0, x < width, y < height else { return 0 }
        return planePointer(0)[y * strides[0] + x]
    }
}

/// Reuses buffers of one size and format: a buffer comes back to the pool when only the pool
/// holds it, so steady-state capture and conversion allocate nothing per frame.
public final class VideoBufferPool: Sendable {
    public let format: PixelFormat
    public let width: Int
    public let height: Int
    /// The buffers behind their lock (not a lock over nothing beside them: ThreadSanitizer
    /// placed the empty value of a `Locked<Void>` on the lock object's own header and reported
    /// two frames converted at once on different threads as a race).
    private let buffers = Locked<[VideoFrameBuffer]>([])
    public let capacity: Int

    public init(format: PixelFormat, width: Int, height: Int, capacity: Int = 8) {
        self.format = format
        self.width = width
        self.height = height
        self.capacity = capacity
    }

    /// A buffer nobody else references, reused when possible.
    public func get() -> VideoFrameBuffer {
        buffers.withLock { buffers in
            for i in buffers.indices where isKnownUniquelyReferenced(&buffers[i]) {
                return buffers[i]
            }
            let buffer = VideoFrameBuffer(format: format, width: width, height: height)
            if buffers.count < capacity { buffers.append(buffer) }
            return buffer
        }
    }

    /// How many buffers the pool has allocated (tests check steady state stops growing).
    public var allocatedCount: Int { buffers.withLock { $0.count } }
}
