import Foundation
import Media
import TestSupport
@testable import Capture

/// Collects what a capturer delivers; `waitForTarget` waits for `target` frames.
final class FrameCollector: VideoCapturerDelegate, Sendable {
    private struct Frame {
        var number: UInt32?
        var stamp: UInt32?
        var timestamp: Int64
        var size: (Int, Int)
    }
    private let frames = Monitor([Frame]())
    let target: Int

    init(target: Int) { self.target = target }

    func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame) {
        let read = TestPattern.read(frame)
        frames.withLock { $0.append(Frame(number: read?.frameNumber, stamp: read?.wallClockMs, timestamp: frame.timestampNs, size: (frame.width, frame.height))) }
    }

    var numbers: [UInt32?] { frames.value.map(\.number) }
    var stamps: [UInt32?] { frames.value.map(\.stamp) }
    var timestamps: [Int64] { frames.value.map(\.timestamp) }
    var sizes: [(Int, Int)] { frames.value.map(\.size) }

    /// Waits (bounded, generous) for the target count; false if it never came.
    func waitForTarget(seconds: Double = 20) -> Bool {
        frames.wait(until: { $0.count >= target }, timeout: .milliseconds(Int64(seconds * 1000)))
    }
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
