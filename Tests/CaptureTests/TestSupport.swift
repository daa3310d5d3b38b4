import Foundation
import Media
@testable import Capture

/// A fresh directory under the system temp dir, removed by `cleanup()`.
struct TempDir {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("capture-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func cleanup() { try? FileManager.default.removeItem(at: url) }
}

/// Collects what a capturer delivers and signals when `target` frames have arrived.
final class FrameCollector: VideoCapturerDelegate, @unchecked Sendable {
    // @unchecked: all state behind `lock`.
    private let lock = NSLock()
    private var _numbers: [UInt32?] = []
    private var _timestamps: [Int64] = []
    private var _sizes: [(Int, Int)] = []
    let target: Int
    let reached = DispatchSemaphore(value: 0)

    init(target: Int) { self.target = target }

    func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame) {
        let number = TestPattern.read(frame)?.frameNumber
        lock.lock()
        _numbers.append(number)
        _timestamps.append(frame.timestampNs)
        _sizes.append((frame.width, frame.height))
        let count = _numbers.count
        lock.unlock()
        if count == target { reached.signal() }
    }

    var numbers: [UInt32?] { lock.lock(); defer { lock.unlock() }; return _numbers }
    var timestamps: [Int64] { lock.lock(); defer { lock.unlock() }; return _timestamps }
    var sizes: [(Int, Int)] { lock.lock(); defer { lock.unlock() }; return _sizes }

    /// Waits (bounded, generous) for the target count; false if it never came.
    func waitForTarget(seconds: Double = 20) -> Bool {
        reached.wait(timeout: .now() + seconds) == .success
    }
}

/// Thread-safe box for values set from capture-thread callbacks.
final class Box<T>: @unchecked Sendable {
    // @unchecked: `value` behind `lock`.
    private let lock = NSLock()
    private var _value: T
    let signal = DispatchSemaphore(value: 0)
    init(_ value: T) { _value = value }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return _value }
        set { lock.lock(); _value = newValue; lock.unlock() }
    }
    func update(_ body: (inout T) -> Void) { lock.lock(); body(&_value); lock.unlock() }
}

/// An I420 buffer filled by `pixel(x, y, plane)`.
func makeI420(width: Int, height: Int, _ pixel: (Int, Int, Int) -> UInt8) -> VideoFrameBuffer {
    let b = VideoFrameBuffer(format: .i420, width: width, height: height)
    for plane in 0..<3 {
        let p = b.planePointer(plane)
        for y in 0..<b.planeHeight(plane) {
            for x in 0..<b.planeWidth(plane) { p[y * b.strides[plane] + x] = pixel(x, y, plane) }
        }
    }
    return b
}

/// Plane contents without stride padding, for equality checks.
func planes(_ b: VideoFrameBuffer) -> [[UInt8]] {
    (0..<b.format.planeCount).map { plane in
        let rowBytes = b.format == .bgra ? 4 * b.width : (b.format.isNV12 && plane == 1 ? 2 * b.planeWidth(1) : b.planeWidth(plane))
        var out: [UInt8] = []
        let p = b.planePointer(plane)
        for y in 0..<b.planeHeight(plane) {
            out.append(contentsOf: UnsafeBufferPointer(start: p + y * b.strides[plane], count: rowBytes))
        }
        return out
    }
}

/// Count of sign changes (each full sine period has two).
func zeroCrossings(_ s: [Int16]) -> Int {
    var count = 0
    for i in 1..<s.count where (s[i - 1] < 0) != (s[i] < 0) { count += 1 }
    return count
}

func rms(_ s: [Int16]) -> Double {
    guard !s.isEmpty else { return 0 }
    return (s.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(s.count)).squareRoot()
}
