import Locks
@testable import Media

/// Pictures and sinks shared by the media tests.
enum Pictures {
    /// An I420 picture: luma and chroma from closures of (x, y) in pixel coordinates.
    static func i420(width: Int, height: Int,
                     y: (Int, Int) -> Int, u: (Int, Int) -> Int = { _, _ in 128 }, v: (Int, Int) -> Int = { _, _ in 128 }) -> VideoFrameBuffer {
        let b = VideoFrameBuffer(format: .i420, width: width, height: height)
        for row in 0..<height {
            for x in 0..<width { b.planePointer(0)[row * b.strides[0] + x] = UInt8(clamping: y(x, row)) }
        }
        for row in 0..<b.planeHeight(1) {
            for x in 0..<b.planeWidth(1) {
                b.planePointer(1)[row * b.strides[1] + x] = UInt8(clamping: u(2 * x, 2 * row))
                b.planePointer(2)[row * b.strides[2] + x] = UInt8(clamping: v(2 * x, 2 * row))
            }
        }
        return b
    }

    /// Grey (luma 50) with a bright 16x16 block (luma 180, U 150, V 100: inside the RGB gamut, so
    /// it survives BGRA) in the top-left corner.
    static func marked(width: Int = 64, height: Int = 48) -> VideoFrameBuffer {
        i420(width: width, height: height,
             y: { x, y in x < 16 && y < 16 ? 180 : 50 },
             u: { x, y in x < 16 && y < 16 ? 150 : 128 },
             v: { x, y in x < 16 && y < 16 ? 100 : 128 })
    }

    /// Smooth colours (no sharp edges, so chroma subsampling costs little).
    static func gradient(width: Int, height: Int) -> VideoFrameBuffer {
        i420(width: width, height: height,
             y: { x, y in 40 + x * 150 / width + y * 40 / height },
             u: { x, y in 90 + x * 70 / width },
             v: { x, y in 170 - y * 70 / height })
    }
}

extension VideoFrameBuffer {
    /// Chroma (U, V) at pixel (x, y) of an I420 buffer.
    func chroma(x: Int, y: Int) -> (u: Int, v: Int) {
        let cx = x / 2, cy = y / 2
        return (Int(planePointer(1)[cy * strides[1] + cx]), Int(planePointer(2)[cy * strides[2] + cx]))
    }

    /// B, G, R, A at (x, y) of a BGRA buffer.
    func bgra(x: Int, y: Int) -> (b: Int, g: Int, r: Int, a: Int) {
        let p = planePointer(0) + y * strides[0] + 4 * x
        return (Int(p[0]), Int(p[1]), Int(p[2]), Int(p[3]))
    }

    /// Luma at (x, y) in any format (converted to I420 first when needed).
    func lumaAny(x: Int, y: Int) -> Int {
        Int(converted(to: .i420).luma(x: x, y: y))
    }

    /// Mean and variance of luma over a rectangle.
    func lumaStats(x: Range<Int>, y: Range<Int>) -> (mean: Double, variance: Double) {
        var sum = 0.0, sum2 = 0.0
        for row in y {
            for col in x {
                let v = Double(luma(x: col, y: row))
                sum += v
                sum2 += v * v
            }
        }
        let n = Double(x.count * y.count)
        let mean = sum / n
        return (mean, sum2 / n - mean * mean)
    }

    func meanLuma() -> Double { lumaStats(x: 0..<width, y: 0..<height).mean }

    /// Whether every luma and chroma sample equals the other buffer's (same format and size).
    func samePixels(as other: VideoFrameBuffer) -> Bool {
        guard format == other.format, width == other.width, height == other.height else { return false }
        for i in 0..<format.planeCount {
            let rowBytes = format == .bgra ? 4 * width : (i == 0 ? width : (format == .i420 ? planeWidth(i) : 2 * planeWidth(i)))
            for row in 0..<planeHeight(i) {
                for x in 0..<rowBytes where planePointer(i)[row * strides[i] + x] != other.planePointer(i)[row * other.strides[i] + x] {
                    return false
                }
            }
        }
        return true
    }
}

/// Keeps every frame it is given.
final class CollectingRenderer: VideoRenderer {
    private let store = Locked<[VideoFrame]>([])
    func render(_ frame: VideoFrame) { store.withLock { $0.append(frame) } }
    var frames: [VideoFrame] { store.withLock { $0 } }
    func clear() { store.withLock { $0.removeAll() } }
}

final class CollectingAudioRenderer: AudioRenderer {
    private let store = Locked<[AudioFrame]>([])
    func render(_ frame: AudioFrame) { store.withLock { $0.append(frame) } }
    var frames: [AudioFrame] { store.withLock { $0 } }
}

/// A capturer driven by the test.
final class ManualAudioCapturer: AudioCapturer {
    private let handler = Locked<(@Sendable (AudioFrame) -> Void)?>(nil)
    var onFrame: (@Sendable (AudioFrame) -> Void)? {
        get { handler.withLock { $0 } }
        set { handler.withLock { $0 = newValue } }
    }
    func emit(_ frame: AudioFrame) { onFrame?(frame) }
}

final class ManualVideoCapturer: VideoCapturer {
    private let target = Locked<WeakDelegate>(WeakDelegate())
    struct WeakDelegate { weak var value: (any VideoCapturerDelegate)? }
    var delegate: (any VideoCapturerDelegate)? {
        get { target.withLock { $0.value } }
        set { target.withLock { $0.value = newValue } }
    }
    func emit(_ frame: VideoFrame) { delegate?.capturer(self, didCapture: frame) }
}
