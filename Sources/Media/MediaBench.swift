#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SeededRandom

/// Per-frame costs of the pixel pipeline at 1280x720 (`make bench` prints them). Each figure is
/// the median of 60 runs after a short warm-up, in milliseconds of one core.
public func mediaBenchmarks() -> [(name: String, value: Double, unit: String)] {
    let width = 1280, height = 720
    let i420 = benchPicture(width: width, height: height)
    let nv12 = i420.converted(to: .nv12VideoRange, pool: VideoBufferPool(format: .nv12VideoRange, width: width, height: height))
    let frame = VideoFrame(buffer: i420, timestampNs: 0)

    let beauty = BeautyFilter(strength: 0.8)
    let color = ColorAdjust(brightness: 0.1, contrast: 1.1, saturation: 1.2)
    let mirror = MirrorProcessor()
    let zoom = CropZoomProcessor(zoom: 1.5, center: .init(x: 0.4, y: 0.5))
    let toI420 = VideoBufferPool(format: .i420, width: width, height: height)
    let toHalf = VideoBufferPool(format: .i420, width: width / 2, height: height / 2)

    return [
        ("media.beauty_720p_i420", medianMs { _ = beauty.process(frame) }, "ms/frame"),
        ("media.color_adjust_720p", medianMs { _ = color.process(frame) }, "ms/frame"),
        ("media.mirror_720p", medianMs { _ = mirror.process(frame) }, "ms/frame"),
        ("media.crop_zoom_720p", medianMs { _ = zoom.process(frame) }, "ms/frame"),
        ("media.nv12_to_i420_720p", medianMs { _ = nv12.converted(to: .i420, pool: toI420) }, "ms/frame"),
        ("media.scale_720p_to_360p", medianMs { _ = i420.scaled(width: width / 2, height: height / 2, pool: toHalf) }, "ms/frame"),
    ]
}

private func medianMs(_ body: () -> Void) -> Double {
    for _ in 0..<5 { body() }
    var samples: [Double] = []
    samples.reserveCapacity(60)
    for _ in 0..<60 {
        let start = threadCPUTimeMs()
        body()
        samples.append(threadCPUTimeMs() - start)
    }
    samples.sort()
    return (samples[29] + samples[30]) / 2
}

/// CPU time of the calling thread: what "ms on one core" means, unaffected by other processes
/// sharing the machine.
private func threadCPUTimeMs() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) * 1e3 + Double(ts.tv_nsec) * 1e-6
}

/// A camera-like test picture: smooth gradients, a few hard-edged shapes and sensor-like noise,
/// so filters do the work they would do on real video.
func benchPicture(width: Int, height: Int) -> VideoFrameBuffer {
    let buffer = VideoFrameBuffer(format: .i420, width: width, height: height)
    var random = SplitMix64(seed: 12345)
    let y = buffer.planePointer(0)
    for row in 0..<height {
        for x in 0..<width {
            let noise = Int(random.next() & 15) - 8
            var v = 60 + (x * 100) / width + (row * 60) / height
            if (x / 160 + row / 120) % 3 == 0 { v += 70 }
            y[row * buffer.strides[0] + x] = UInt8(clamping: v + noise)
        }
    }
    for plane in 1...2 {
        let p = buffer.planePointer(plane)
        for row in 0..<buffer.planeHeight(plane) {
            for x in 0..<buffer.planeWidth(plane) {
                p[row * buffer.strides[plane] + x] = UInt8(clamping: 128 + (plane == 1 ? -20 : 25) + (x + row) % 16)
            }
        }
    }
    return buffer
}
