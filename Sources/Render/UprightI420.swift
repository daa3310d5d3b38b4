import CYUV
import Media

/// Read-only pointers to an I420 picture (three planes with their strides).
struct I420Planes {
    var y: UnsafePointer<UInt8>
    var u: UnsafePointer<UInt8>
    var v: UnsafePointer<UInt8>
    var strideY: Int
    var strideU: Int
    var strideV: Int
    var width: Int
    var height: Int

    init(_ buffer: VideoFrameBuffer) {
        y = UnsafePointer(buffer.planePointer(0))
        u = UnsafePointer(buffer.planePointer(1))
        v = UnsafePointer(buffer.planePointer(2))
        strideY = buffer.strides[0]
        strideU = buffer.strides[1]
        strideV = buffer.strides[2]
        width = buffer.width
        height = buffer.height
    }
}

/// Turns any frame into an upright I420 picture (optionally of a fixed size) with libyuv,
/// keeping its scratch buffers between frames so steady state allocates nothing.
/// Not thread-safe: each consumer thread (file writer, SDL thread) owns one.
final class UprightI420Converter {
    private var converted: VideoFrameBuffer?
    private var rotated: VideoFrameBuffer?
    private var scaled: VideoFrameBuffer?

    /// Whether the last call had to scale (the frame's upright size differed from the target).
    private(set) var lastCallScaled = false

    /// Calls `body` with the frame as upright I420 of `size` (or its own upright size when nil).
    /// The pointers are valid only inside `body`.
    func withUprightI420<R>(_ frame: VideoFrame, size: (width: Int, height: Int)? = nil,
                            _ body: (I420Planes) -> R) -> R {
        let buffer = frame.buffer
        // 1. Any format → I420 (no copy for I420).
        let source: VideoFrameBuffer
        switch buffer.format {
        case .i420:
            source = buffer
        case .nv12VideoRange, .nv12FullRange:
            let dst = scratch(&converted, buffer.width, buffer.height)
            _ = NV12ToI420(buffer.planePointer(0), Int32(buffer.strides[0]),
                           buffer.planePointer(1), Int32(buffer.strides[1]),
                           dst.planePointer(0), Int32(dst.strides[0]),
                           dst.planePointer(1), Int32(dst.strides[1]),
                           dst.planePointer(2), Int32(dst.strides[2]),
                           Int32(buffer.width), Int32(buffer.height))
            source = dst
        case .bgra:
            // libyuv's "ARGB" is B,G,R,A in memory: our BGRA.
            let dst = scratch(&converted, buffer.width, buffer.height)
            _ = ARGBToI420(buffer.planePointer(0), Int32(buffer.strides[0]),
                           dst.planePointer(0), Int32(dst.strides[0]),
                           dst.planePointer(1), Int32(dst.strides[1]),
                           dst.planePointer(2), Int32(dst.strides[2]),
                           Int32(buffer.width), Int32(buffer.height))
            source = dst
        }
        // 2. Rotate upright.
        var upright = source
        if frame.rotation != .r0 {
            let swap = frame.rotation.swapsDimensions
            let dst = scratch(&rotated, swap ? source.height : source.width, swap ? source.width : source.height)
            let mode: RotationMode
            switch frame.rotation {
            case .r0: mode = kRotate0
            case .r90: mode = kRotate90
            case .r180: mode = kRotate180
            case .r270: mode = kRotate270
            }
            _ = I420Rotate(source.planePointer(0), Int32(source.strides[0]),
                           source.planePointer(1), Int32(source.strides[1]),
                           source.planePointer(2), Int32(source.strides[2]),
                           dst.planePointer(0), Int32(dst.strides[0]),
                           dst.planePointer(1), Int32(dst.strides[1]),
                           dst.planePointer(2), Int32(dst.strides[2]),
                           Int32(source.width), Int32(source.height), mode)
            upright = dst
        }
        // 3. Scale to the target size.
        lastCallScaled = false
        if let size, size.width != upright.width || size.height != upright.height {
            let dst = scratch(&scaled, size.width, size.height)
            _ = I420Scale(upright.planePointer(0), Int32(upright.strides[0]),
                          upright.planePointer(1), Int32(upright.strides[1]),
                          upright.planePointer(2), Int32(upright.strides[2]),
                          Int32(upright.width), Int32(upright.height),
                          dst.planePointer(0), Int32(dst.strides[0]),
                          dst.planePointer(1), Int32(dst.strides[1]),
                          dst.planePointer(2), Int32(dst.strides[2]),
                          Int32(size.width), Int32(size.height), kFilterBox)
            upright = dst
            lastCallScaled = true
        }
        return withExtendedLifetime(buffer) { body(I420Planes(upright)) }
    }

    private func scratch(_ slot: inout VideoFrameBuffer?, _ width: Int, _ height: Int) -> VideoFrameBuffer {
        if let b = slot, b.width == width, b.height == height { return b }
        let b = VideoFrameBuffer(format: .i420, width: width, height: height)
        slot = b
        return b
    }
}

extension VideoFrame {
    /// Width and height once the rotation is applied (what a viewer sees).
    var uprightSize: (width: Int, height: Int) {
        rotation.swapsDimensions ? (height, width) : (width, height)
    }
}
