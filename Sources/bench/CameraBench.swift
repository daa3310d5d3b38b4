// The camera rows: the synthetic scene's render cost, the capturer's per-frame work, MJPEG
// decode at 720p, our V4L2 path against libavcodec (what ffmpeg / PyAV read webcams with), and
// face detection (FaceBench.swift).
import Camera
import CFFmpeg
import Media
import Render
import Synchronization

/// Rows of the camera phase, each the median thread-CPU ms of 60 frames.
func cameraBenchmarks() async -> [Row] {
    let scene = SyntheticScene()
    let back = SyntheticDevices.back, front = SyntheticDevices.front
    let w = 1280, h = 720
    var rows: [Row] = []

    // The scene's canvas is cached per size: the warm-up renders fill it.
    let plain = CameraControlState()
    let render = medianCPUMs { n in
        _ = scene.render(device: back, width: w, height: h, format: .nv12VideoRange, controls: plain, frameNumber: UInt64(n))
    }
    rows.append(Row("camera.synthetic.render_720p", render, "ms/frame", target: .atMost(5),
                    note: "SyntheticScene render of the back camera at 1280x720 NV12, default controls (auto exposure and white balance, sharp), canvas cached; CPU of one thread per frame, median of 60"))
    let front720 = medianCPUMs { n in
        _ = scene.render(device: front, width: w, height: h, format: .nv12VideoRange, controls: plain, frameNumber: UInt64(n))
    }
    rows.append(Row("camera.synthetic.render_720p_front", front720, "ms/frame", target: .atMost(8),
                    note: "the front camera the same way: the room plus its subject's face, hair and shoulders painted every frame (faces move) and metered 4x4 per grid cell they cover"))
    var blurred = CameraControlState()
    blurred.record(.zoom(2))
    blurred.record(.focusPosition(0))
    let blur = medianCPUMs { n in
        _ = scene.render(device: back, width: w, height: h, format: .nv12VideoRange, controls: blurred, frameNumber: UInt64(n))
    }
    rows.append(Row("camera.synthetic.render_720p_zoom_blur", blur, "ms/frame",
                    note: "the same at zoom 2 with the lens locked at 0 (defocused: crop + scale + box blur)"))

    let framePath: Double?
    var framePathNote = "a real CameraCapturer on a stub backend, the front camera at 1280x720 NV12: per frame pushed, NV12 -> I420 and the front mirror, to a delegate that does nothing; CPU of the pushing thread, median of 60"
    do {
        framePath = try await capturerFramePathMs(device: front, scene: scene)
    } catch {
        framePath = nil
        framePathNote = "failed: \(error)"
    }
    rows.append(Row("camera.capturer.frame_path_720p", framePath, "ms/frame", note: framePathNote))

    rows += mjpegRows(scene: scene, device: back, width: w, height: h)
    rows += await faceDetectionBenchmarks()
    return rows
}

/// Median thread-CPU ms of `body` over 60 runs after 5 warm-up runs; `body` gets the run index.
func medianCPUMs(_ body: (Int) -> Void) -> Double {
    for i in 0..<5 { body(i) }
    var samples: [Double] = []
    for i in 0..<60 {
        let start = threadCPUSeconds()
        body(5 + i)
        samples.append((threadCPUSeconds() - start) * 1000)
    }
    samples.sort()
    return (samples[29] + samples[30]) / 2
}

// MARK: capturer frame path

private func capturerFramePathMs(device: CaptureDevice, scene: SyntheticScene) async throws -> Double {
    let backend = PushBackend(device: device)
    let capturer = CameraCapturer(backend: backend, delegate: DiscardingDelegate())
    try await capturer.startCapture(device: device, width: 1280, height: 720, fps: 30)
    guard let stream = backend.stream.withLock({ $0 }), stream.format.width == 1280, stream.format.height == 720,
          stream.format.pixelFormat == .nv12 else {
        await capturer.stopCapture()
        throw MediaError("the capturer did not open a 1280x720 NV12 stream")
    }
    let raw = scene.render(device: device, width: 1280, height: 720, format: .nv12VideoRange, controls: CameraControlState())
    let before = capturer.framesDelivered
    let ms = medianCPUMs { _ in stream.sink.cameraStream(didCapture: raw) }
    let delivered = capturer.framesDelivered - before
    await capturer.stopCapture()
    guard delivered == 65 else { throw MediaError("the capturer delivered \(delivered) of 65 pushed frames") }
    return ms
}

/// One device; `open` hands back a stream the bench pushes frames into on its own thread.
final class PushBackend: CameraBackend {
    let name = "bench"
    let device: CaptureDevice
    let stream = Mutex<PushStream?>(nil)

    init(device: CaptureDevice) { self.device = device }

    func devices() throws(CameraError) -> [CaptureDevice] { [device] }

    func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
              sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        let s = PushStream(format: format, sink: sink)
        stream.withLock { $0 = s }
        return s
    }
}

final class PushStream: CameraStream {
    let format: CaptureFormat
    let sink: any CameraStreamSink
    init(format: CaptureFormat, sink: any CameraStreamSink) {
        self.format = format
        self.sink = sink
    }
    func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting { setting }
    func setFrameRate(_ fps: Double) throws(CameraError) -> Double { fps }
    func stop() {}
}

final class DiscardingDelegate: VideoCapturerDelegate {
    func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame) {}
}

// MARK: MJPEG decode

private func mjpegRows(scene: SyntheticScene, device: CaptureDevice, width: Int, height: Int) -> [Row] {
    let picture = scene.render(device: device, width: width, height: height, controls: CameraControlState())
    let jpeg: [UInt8]
    do {
        jpeg = try JPEGEncoder.encode(picture, quality: 85)
    } catch {
        return [Row("camera.mjpeg_720p.swift", nil, "ms/frame", note: "failed to make the JPEG: \(error)")]
    }
    let input = "a \(width)x\(height) 4:2:0 JPEG (quality 85, \(jpeg.count) bytes) of the synthetic back-camera scene"

    let converter = V4L2FrameConverter(format: V4L2PixFormat(width: width, height: height, fourcc: V4L2FourCC.mjpeg,
                                                             sizeImage: jpeg.count))
    let swiftMs: Double? = jpeg.withUnsafeBytes { bytes in
        converter.convert(bytes) == nil ? nil : medianCPUMs { _ in _ = converter.convert(bytes) }
    }
    var avMs: Double?
    var avNote = "libavcodec \(String(cString: av_version_info())) mjpeg decoder (thread_count 1) decoding the same bytes to its native yuvj420p frame, what ffmpeg / PyAV (aiortc's MediaPlayer on a V4L2 webcam) do per frame; median of 60"
    do {
        let decoder = try MJPEGDecoder(jpeg)
        try decoder.decode(width: width, height: height)
        avMs = medianCPUMs { _ in try? decoder.decode(width: width, height: height) }
    } catch {
        avNote = "failed: \(error)"
    }
    let ratio = swiftMs.flatMap { s in avMs.flatMap { a in a > 0 ? s / a : nil } }
    return [
        Row("camera.mjpeg_720p.swift", swiftMs, "ms/frame",
            note: swiftMs == nil ? "failed: V4L2FrameConverter rejected the JPEG"
                : "V4L2FrameConverter (libyuv MJPGToI420 on libjpeg-turbo, then full -> limited range) turning \(input) into I420; median of 60"),
        Row("camera.mjpeg_720p.libavcodec", avMs, "ms/frame", note: avNote),
        Row("camera.mjpeg_720p.swift_vs_libavcodec", ratio, "ratio", target: .atMost(1.5),
            note: "ours / libavcodec per frame; ours also rescales full range to limited range, which libavcodec's yuvj420p output leaves to the consumer"),
    ]
}

/// libavcodec's MJPEG decoder fed one JPEG over and over from a refcounted packet (as a demuxer
/// hands it packets, so sending costs no copy).
private final class MJPEGDecoder {
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var picture: UnsafeMutablePointer<AVFrame>?

    init(_ jpeg: [UInt8]) throws {
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG) else { throw MediaError("libavcodec has no MJPEG decoder") }
        context = avcodec_alloc_context3(codec)
        packet = av_packet_alloc()
        picture = av_frame_alloc()
        guard let ctx = context, let pkt = packet, picture != nil else { throw MediaError("MJPEG decoder: out of memory") }
        ctx.pointee.thread_count = 1
        let rc = avcodec_open2(ctx, codec, nil)
        guard rc >= 0 else { throw MediaError("MJPEG decoder: avcodec_open2 failed (\(rc))") }
        guard av_new_packet(pkt, Int32(jpeg.count)) == 0, let data = pkt.pointee.data else {
            throw MediaError("MJPEG decoder: cannot allocate a \(jpeg.count)-byte packet")
        }
        jpeg.withUnsafeBufferPointer { src in
            if let s = src.baseAddress { data.update(from: s, count: src.count) }
        }
    }

    deinit {
        av_packet_free(&packet)
        av_frame_free(&picture)
        avcodec_free_context(&context)
    }

    /// Decodes the packet once; throws unless a `width`×`height` yuvj420p picture comes out.
    func decode(width: Int, height: Int) throws {
        guard let ctx = context, let pkt = packet, let pic = picture else { throw MediaError("MJPEG decoder not open") }
        let sent = avcodec_send_packet(ctx, pkt)
        guard sent >= 0 else { throw MediaError("MJPEG decode: avcodec_send_packet failed (\(sent))") }
        var pictures = 0
        while true {
            let rc = avcodec_receive_frame(ctx, pic)
            if rc == swiftrtc_averror_eagain() || rc == swiftrtc_averror_eof() { break }
            guard rc >= 0 else { throw MediaError("MJPEG decode: avcodec_receive_frame failed (\(rc))") }
            defer { av_frame_unref(pic) }
            guard AVPixelFormat(pic.pointee.format) == AV_PIX_FMT_YUVJ420P,
                  Int(pic.pointee.width) == width, Int(pic.pointee.height) == height else {
                throw MediaError("MJPEG decode: got a \(pic.pointee.width)x\(pic.pointee.height) picture in format \(pic.pointee.format)")
            }
            pictures += 1
        }
        guard pictures == 1 else { throw MediaError("MJPEG decode: \(pictures) pictures for one packet") }
    }
}
