#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Media

/// Per-frame encode and decode cost at 1280x720, 1.5 Mbps, 30 fps: the median over 60 frames of
/// a moving synthetic picture (drawing is not timed). Time is the calling thread's CPU time (all
/// codecs here run single-threaded), so other load on the machine does not inflate it. Names are
/// stable for the bench report.
public func codecBenchmarks() -> [(name: String, value: Double, unit: String)] {
    let width = 1280, height = 720, frames = 60
    let settings = VideoEncoderSettings(width: width, height: height, framerate: 30, bitrate: 1_500_000)
    var results: [(name: String, value: Double, unit: String)] = []

    func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    func run(_ label: String, _ encoder: any VideoEncoder, _ decoders: [(String, any VideoDecoder)]) {
        var encodeTimes: [Double] = []
        var decodeTimes = [[Double]](repeating: [], count: decoders.count)
        var bytes = 0
        for i in 0..<frames {
            let frame = benchFrame(i, width: width, height: height)
            var encoded: EncodedFrame?
            let t = threadCPUMilliseconds {
                encoded = try? encoder.encode(frame, rtpTimestamp: UInt32(i * 3000), forceKeyframe: false)
            }
            encodeTimes.append(t)
            guard let encoded else { continue }
            bytes += encoded.data.count
            for (d, decoder) in decoders.enumerated() {
                decodeTimes[d].append(threadCPUMilliseconds { _ = try? decoder.1.decode(encoded) })
            }
        }
        results.append(("\(label) encode 720p", median(encodeTimes), "ms/frame"))
        for (d, decoder) in decoders.enumerated() {
            results.append(("\(decoder.0) decode 720p", median(decodeTimes[d]), "ms/frame"))
        }
        results.append(("\(label) bitrate 720p", Double(bytes * 8) / (Double(frames) / 30) / 1000, "kbps"))
    }

    if let h264 = try? OpenH264Encoder(settings: settings, options: .init(frameSkip: false)),
       let ffmpeg = try? FFmpegH264Decoder(), let openh264 = try? OpenH264Decoder() {
        run("H.264 OpenH264", h264, [("H.264 FFmpeg", ffmpeg), ("H.264 OpenH264", openh264)])
    }
    if let vp8 = try? VP8Encoder(settings: settings, options: .init(frameDropping: false)), let decoder = try? VP8Decoder() {
        run("VP8 libvpx", vp8, [("VP8 libvpx", decoder)])
    }
    return results
}

/// CPU time the calling thread spends in `body`, in milliseconds.
private func threadCPUMilliseconds(_ body: () -> Void) -> Double {
    var start = timespec(), end = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start)
    body()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end)
    return Double(end.tv_sec - start.tv_sec) * 1000 + Double(end.tv_nsec - start.tv_nsec) / 1e6
}

/// A moving test picture: drifting gradient with fine texture and a box crossing it.
private func benchFrame(_ index: Int, width: Int, height: Int) -> VideoFrame {
    let buffer = VideoFrameBuffer(format: .i420, width: width, height: height)
    let shift = index * 3
    let box = width / 10, boxX = (index * 6) % (width - box), boxY = (index * 3) % (height - box)
    let y = buffer.planePointer(0)
    for row in 0..<height {
        let line = y + row * buffer.strides[0]
        for col in 0..<width {
            let x = col + shift
            var v = 40 + (x % width) * 120 / width + row * 40 / height + ((x / 4 + row / 4) & 1) * 20 - 10 + (x * 3 + row * 5) % 17 - 8
            if col >= boxX && col < boxX + box && row >= boxY && row < boxY + box { v = 220 }
            line[col] = UInt8(clamping: v)
        }
    }
    for p in 1...2 {
        let plane = buffer.planePointer(p)
        for row in 0..<buffer.planeHeight(p) {
            let line = plane + row * buffer.strides[p]
            for col in 0..<buffer.planeWidth(p) { line[col] = UInt8(truncatingIfNeeded: 110 + p * 20 + ((col + shift / 2) % 64) / 4) }
        }
    }
    return VideoFrame(buffer: buffer, timestampNs: Int64(index) * 33_333_333)
}
