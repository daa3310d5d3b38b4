import CYUV
import Dispatch
import Media
import Locks

/// Writes frames to a YUV4MPEG2 file (`C420jpeg`), the format ffmpeg, mpv and libwebrtc's test
/// tools read. The file's size is the upright size of the first frame; later frames are rotated
/// upright and, if their size differs, scaled to it (counted in `framesScaled`).
///
/// `render(_:)` only queues the frame: conversion and disk writes happen on a background serial
/// queue. At most `maxQueuedFrames` wait there; beyond that frames are dropped and counted, so a
/// slow disk never stalls the decode or capture thread. I/O errors stop writing and are kept in
/// `lastError`; nothing traps.
public final class Y4MFileRenderer: VideoRenderer {
    public let path: String
    public let frameRate: (numerator: Int, denominator: Int)
    public let maxQueuedFrames: Int

    private struct State {
        var pending = 0
        var closed = false
        var written = 0
        var dropped = 0
        var scaled = 0
        var error: MediaError?
        var size: (width: Int, height: Int)?
    }
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "swiftrtc.render.y4m")
    private let writer: Y4MWriter

    /// Opens (creates or truncates) `path`. An open failure does not throw: it is in `lastError`
    /// and the renderer ignores frames, so it can sit in a pipeline like any other renderer.
    public init(path: String, frameRate: (numerator: Int, denominator: Int) = (30, 1), maxQueuedFrames: Int = 8) {
        self.path = path
        self.frameRate = frameRate
        self.maxQueuedFrames = max(1, maxQueuedFrames)
        writer = Y4MWriter(frameRate: frameRate)
        if frameRate.numerator <= 0 || frameRate.denominator <= 0 {
            fail(MediaError("Y4M frame rate \(frameRate.numerator):\(frameRate.denominator) is not positive"))
            return
        }
        do {
            writer.output = try FileOutput(path: path)
        } catch {
            fail(error)
        }
    }

    deinit {
        // Closures on `queue` hold `writer`, not `self`; close the file once they are done.
        let writer = self.writer
        queue.async { _ = try? writer.output?.close() }
    }

    public func render(_ frame: VideoFrame) {
        let accepted = state.withLock { s -> Bool in
            guard !s.closed, s.error == nil else { return false }
            guard s.pending < maxQueuedFrames else { s.dropped += 1; return false }
            s.pending += 1
            return true
        }
        guard accepted else { return }
        queue.async { [writer, weak self] in
            let result = Result { () throws(MediaError) in try writer.write(frame) }
            guard let self else { return }
            self.state.withLock { s in
                s.pending -= 1
                switch result {
                case .success(let scaled):
                    s.written += 1
                    if scaled { s.scaled += 1 }
                    s.size = writer.size
                case .failure(let error):
                    if s.error == nil { s.error = error }
                }
            }
        }
    }

    /// Waits for queued frames to be written, then closes the file. Later frames are ignored.
    public func close() {
        let already = state.withLock { s in
            defer { s.closed = true }
            return s.closed
        }
        guard !already else { return }
        let writer = self.writer
        let result = queue.sync { Result { () throws(MediaError) in try writer.output?.close() } }
        if case .failure(let error) = result { fail(error) }
    }

    /// The first I/O error (open, write or close), if any.
    public var lastError: MediaError? { state.withLock { $0.error } }
    public var framesWritten: Int { state.withLock { $0.written } }
    /// Frames not written because the queue was full (the disk could not keep up).
    public var framesDropped: Int { state.withLock { $0.dropped } }
    /// Frames whose upright size differed from the file's and were scaled.
    public var framesScaled: Int { state.withLock { $0.scaled } }
    /// The file's picture size, known once the first frame is written.
    public var size: (width: Int, height: Int)? { state.withLock { $0.size } }

    private func fail(_ error: MediaError) {
        state.withLock { s in if s.error == nil { s.error = error } }
    }
}

/// The part of the renderer that runs on its queue: file, converter, packing buffer.
private final class Y4MWriter: @unchecked Sendable {
    // @unchecked: every member is touched only on the renderer's serial queue (or in init
    // before the queue sees the object).
    let frameRate: (numerator: Int, denominator: Int)
    var output: FileOutput?
    private(set) var size: (width: Int, height: Int)?
    private let converter = UprightI420Converter()
    private var frameBytes: [UInt8] = []
    private var failed = false

    init(frameRate: (numerator: Int, denominator: Int)) { self.frameRate = frameRate }

    /// Writes one frame (the header first); returns whether it had to be scaled.
    func write(_ frame: VideoFrame) throws(MediaError) -> Bool {
        guard let output, !failed else { return false }
        do {
            return try writeFrame(frame, to: output)
        } catch {
            failed = true
            throw error
        }
    }

    private func writeFrame(_ frame: VideoFrame, to output: FileOutput) throws(MediaError) -> Bool {
        if size == nil {
            let s = frame.uprightSize
            size = s
            // Full-range camera samples are kept as they are; ffmpeg's tag says so.
            let range = frame.format == .nv12FullRange ? " XCOLORRANGE=FULL" : ""
            let header = "YUV4MPEG2 W\(s.width) H\(s.height) F\(frameRate.numerator):\(frameRate.denominator) Ip A1:1 C420jpeg\(range)\n"
            try output.write(Array(header.utf8))
            let cw = (s.width + 1) / 2, ch = (s.height + 1) / 2
            frameBytes = Array("FRAME\n".utf8) + [UInt8](repeating: 0, count: s.width * s.height + 2 * cw * ch)
        }
        guard let size else { return false }
        let w = size.width, h = size.height, cw = (w + 1) / 2, ch = (h + 1) / 2
        converter.withUprightI420(frame, size: size) { p in
            frameBytes.withUnsafeMutableBufferPointer { out in
                guard let base = out.baseAddress else { return }
                let y = base + 6, u = y + w * h, v = u + cw * ch
                _ = I420Copy(p.y, Int32(p.strideY), p.u, Int32(p.strideU), p.v, Int32(p.strideV),
                             y, Int32(w), u, Int32(cw), v, Int32(cw), Int32(w), Int32(h))
            }
        }
        try output.write(frameBytes)
        return converter.lastCallScaled
    }
}
