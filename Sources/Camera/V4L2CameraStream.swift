import CV4L2
import Foundation
import Glibc
import Media

/// An open, streaming V4L2 device: mmap buffers, a capture thread (poll → DQBUF → convert →
/// sink → QBUF), controls written and read back, frame rate changes while streaming.
public final class V4L2CameraStream: CameraStream, @unchecked Sendable {
    // @unchecked: mutable state is guarded by `lock`; the capture thread touches buffers only
    // between its DQBUF and QBUF of them.
    public let device: String
    private let io: any V4L2DeviceIO
    private let sink: any CameraStreamSink
    private let map: V4L2ControlMap
    private let capabilities: CameraCapabilities
    private let converter: V4L2FrameConverter
    private let lock = NSLock()
    private let finished = DispatchSemaphore(value: 0)
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var held: Int?
    private var stopped = false
    private var threadDone = false
    private var captureThread: Thread?
    private var dropped = 0
    private var delivered = 0
    private var interval: V4L2Fraction?

    /// The format the driver chose (its size is the frames' size).
    public let format: V4L2PixFormat
    /// Frames dropped because their data was short or corrupt.
    public var droppedFrameCount: Int { locked { dropped } }
    public var deliveredFrameCount: Int { locked { delivered } }
    /// The frame rate now in effect, when the driver reports one.
    public var frameRate: Double? { locked { interval?.fps } }

    init(io: any V4L2DeviceIO, format requested: CaptureFormat, fps: Double, controls: CameraControlState,
         sink: any CameraStreamSink) throws(CameraError) {
        let path = io.path
        device = path
        self.io = io
        self.sink = sink
        var ok = false
        defer { if !ok { io.close() } }
        func fail(_ e: V4L2Error, _ what: String) -> CameraError { V4L2ControlMap.cameraError(e, path: path, what) }

        guard let fourcc = V4L2FourCC.code(for: requested.pixelFormat) else {
            throw CameraError(.unsupported, device: path, "V4L2 cannot deliver \(requested.pixelFormat.rawValue)")
        }
        let actual: V4L2PixFormat
        do { actual = try io.setFormat(V4L2PixFormat(width: requested.width, height: requested.height, fourcc: fourcc)) } catch {
            throw fail(error, "cannot set format \(requested.sizeDescription) \(V4L2FourCC.string(fourcc))")
        }
        guard actual.fourcc == fourcc, VideoFrameBuffer.isValidSize(width: actual.width, height: actual.height) else {
            throw CameraError(.unsupported, device: path, "driver gave \(actual.width)x\(actual.height) \(V4L2FourCC.string(actual.fourcc)) for \(requested.sizeDescription) \(V4L2FourCC.string(fourcc))")
        }
        format = actual
        converter = V4L2FrameConverter(format: actual)
        do { interval = try io.setFrameInterval(V4L2Fraction(fps: fps)) } catch {
            // Drivers without frame-rate control answer ENOTTY/EINVAL: stream at their rate.
            guard error.errno == ENOTTY || error.errno == EINVAL else { throw fail(error, "cannot set \(fmt(fps)) fps") }
        }
        do { map = try V4L2ControlMap(io: io) } catch { throw fail(error, "cannot query controls") }
        capabilities = map.capabilities
        for setting in controls.settings {
            // Settings for controls this device lacks (a default zoom of 1, torch off) are skipped.
            guard let clamped = try? capabilities.clamp(setting, device: path) else { continue }
            _ = try map.apply(clamped, io: io)
        }
        do throws(V4L2Error) {
            let count = try io.requestBuffers(count: 4)
            guard count > 0 else { throw V4L2Error(ENOMEM, "VIDIOC_REQBUFS") }
            for i in 0..<count { buffers.append(try io.mapBuffer(index: i)) }
            for i in 0..<count { try io.queueBuffer(index: i) }
            try io.streamOn()
        } catch {
            for b in buffers { io.unmapBuffer(b) }
            throw fail(error, "cannot start streaming")
        }
        ok = true
        let thread = Thread { [self] in self.captureLoop() }
        thread.name = "v4l2 \(path)"
        captureThread = thread
        thread.start()
    }

    private func captureLoop() {
        var failure: CameraError?
        while failure == nil, !locked({ stopped }) {
            do {
                guard try io.waitForFrame(timeoutMs: 1000) else { continue }
            } catch {
                failure = V4L2ControlMap.lost(error, path: device)
                break
            }
            let dq: V4L2DequeuedBuffer
            do {
                dq = try locked { () throws(V4L2Error) -> V4L2DequeuedBuffer in
                    let d = try io.dequeueBuffer()
                    held = d.index
                    return d
                }
            } catch {
                if error.errno == EAGAIN { continue }
                failure = V4L2ControlMap.lost(error, path: device)
                break
            }
            if dq.index >= 0, dq.index < buffers.count, !dq.hasError,
               let buffer = converter.convert(UnsafeRawBufferPointer(rebasing: buffers[dq.index].prefix(min(dq.bytesUsed, buffers[dq.index].count)))) {
                let frame = VideoFrame(buffer: buffer, rotation: .r0, timestampNs: dq.timestampNs ?? cv4l2_monotonic_ns())
                locked { delivered += 1 }
                sink.cameraStream(didCapture: frame)
            } else {
                locked { dropped += 1 }
            }
            do {
                try locked { () throws(V4L2Error) in
                    defer { held = nil }
                    // Re-queued even when stopping: STREAMOFF follows and takes it back anyway.
                    try io.queueBuffer(index: dq.index)
                }
            } catch {
                failure = V4L2ControlMap.lost(error, path: device)
            }
        }
        if let failure, !locked({ stopped }) { sink.cameraStream(didFail: failure) }
        release()
        finished.signal()
    }

    /// STREAMOFF, unmap, close (on the capture thread, after its last buffer).
    private func release() {
        locked {
            threadDone = true
            try? io.streamOff()
            for b in buffers { io.unmapBuffer(b) }
            buffers = []
            _ = try? io.requestBuffers(count: 0)
            io.close()
        }
    }

    public func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting {
        try locked { () throws(CameraError) in
            guard !stopped, !threadDone else { throw CameraError(.notRunning, device: device, "stream is stopped") }
            return try map.apply(setting, io: io)
        }
    }

    public func setFrameRate(_ fps: Double) throws(CameraError) -> Double {
        guard fps.isFinite, fps > 0 else { throw CameraError(.invalidArgument, device: device, "frame rate \(fps) is not positive") }
        return try locked { () throws(CameraError) in
            guard !stopped, !threadDone else { throw CameraError(.notRunning, device: device, "stream is stopped") }
            let wanted = V4L2Fraction(fps: fps)
            do throws(V4L2Error) {
                let got = try io.setFrameInterval(wanted)
                interval = got
                return got.fps
            } catch where error.errno == EBUSY {
                // uvcvideo refuses S_PARM while streaming: stop, set, re-queue, restart.
                do throws(V4L2Error) {
                    try io.streamOff()
                    let got = try io.setFrameInterval(wanted)
                    for i in buffers.indices where i != held { try io.queueBuffer(index: i) }
                    try io.streamOn()
                    interval = got
                    return got.fps
                } catch {
                    throw V4L2ControlMap.cameraError(error, path: device, "cannot restart the stream at \(fmt(fps)) fps")
                }
            } catch {
                throw V4L2ControlMap.cameraError(error, path: device, "cannot set \(fmt(fps)) fps")
            }
        }
    }

    public func stop() {
        let first = locked { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        io.interruptWait()
        // From the sink's callback (the capture thread itself) we cannot wait for it; it exits
        // as soon as the callback returns.
        if Thread.current !== captureThread {
            finished.wait()
            finished.signal()   // later stop() calls pass too
        }
    }

    private func locked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    deinit {
        if !locked({ threadDone }) && captureThread == nil { io.close() }
    }
}

extension V4L2ControlMap {
    /// A streaming failure: the device is gone as far as the capturer is concerned.
    static func lost(_ e: V4L2Error, path: String) -> CameraError {
        let hint = e.errno == ENODEV ? " (unplugged?)" : ""
        return CameraError(.deviceLost, device: path, "\(e.operation) failed: \(e.text)\(hint)")
    }
}
