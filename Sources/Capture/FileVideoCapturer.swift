#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Media
import Locks

/// Plays a video file as a camera (the iOS SDK's `RTCFileVideoCapturer`): Y4M is read natively,
/// anything else through libavformat/libavcodec. Frames go to the delegate at the file's frame
/// rate on the capturer's own thread, stamped with CLOCK_MONOTONIC ns.
///
/// At the end of the file it starts again when `loop` is set, otherwise it reports `.ended` on
/// `events` and stops. A read error mid-file is reported as `.failed` and stops delivery.
public final class FileVideoCapturer: VideoCapturer, Sendable {
    public let path: String
    public let loop: Bool

    private struct Callbacks {
        var delegate: (any VideoCapturerDelegate)?
    }
    private let callbacks = Locked(Callbacks())
    /// The open file; touched only under this lock (by the capture thread or `readNextFrame`).
    private let reader = Locked<FileReader?>(nil)
    private let thread = PacedThreadSlot()

    /// The end of the file, or a read error (the newest 16 wait for a reader).
    public let events: AsyncStream<FileCaptureEvent>
    private let eventSink: AsyncStream<FileCaptureEvent>.Continuation

    public init(path: String, loop: Bool = false, delegate: (any VideoCapturerDelegate)? = nil) {
        self.path = path
        self.loop = loop
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(16))
        callbacks.withLock { $0.delegate = delegate }
    }

    deinit {
        stop()
        eventSink.finish()
    }

    /// Receives every frame (held strongly, on the capture thread).
    public var delegate: (any VideoCapturerDelegate)? {
        get { callbacks.withLock { $0.delegate } }
        set { callbacks.withLock { $0.delegate = newValue } }
    }

    /// The file's frame rate (opens the file if needed).
    public func frameRate() throws -> Double { try withReader { $0.frameRate } }

    /// The file's picture size as its header/container declares it (opens the file if needed).
    public func size() throws -> (width: Int, height: Int) { try withReader { ($0.width, $0.height) } }

    public var isRunning: Bool { thread.isRunning }

    /// Opens the file and starts delivering frames at its frame rate, from the first frame.
    /// Throws a `MediaError` naming the file and the reason when it cannot be read as video.
    public func start() throws {
        let started = try thread.start(prepare: {
            let rate = try withReader { r in
                try r.rewind()
                return r.frameRate
            }
            return Int64((1e9 / rate).rounded())
        }) { [weak self] _, now in
            guard let self else { return false }
            return self.tick(now: now)
        }
        guard started else { throw MediaError("\(path): cannot start the capture thread") }
    }

    /// Stops delivering and waits for the capture thread to finish. Idempotent. The file stays
    /// open; `start()` plays it again from the beginning.
    public func stop() { thread.stop() }

    /// Manual mode (tests, offline pipelines): the next frame, stamped `timestampNs` (default:
    /// now on CLOCK_MONOTONIC), or nil at the end of a non-looping file. Does not call the
    /// delegate. Throws for an unreadable file or a read error.
    public func readNextFrame(timestampNs: Int64? = nil) throws -> VideoFrame? {
        let buffer = try withReader { r in try Self.next(from: r, loop: loop) }
        guard let buffer else { return nil }
        return VideoFrame(buffer: buffer, timestampNs: timestampNs ?? CaptureClock.monotonicNs())
    }

    /// One paced step of the capture thread; false ends the thread.
    private func tick(now: Int64) -> Bool {
        let result: Result<VideoFrameBuffer?, MediaError>
        do {
            result = .success(try withReader { r in try Self.next(from: r, loop: loop) })
        } catch let error as MediaError {
            result = .failure(error)
        } catch {
            result = .failure(MediaError("\(path): \(error)"))
        }
        switch result {
        case .success(let buffer?):
            let delegate = callbacks.withLock { $0.delegate }
            delegate?.capturer(self, didCapture: VideoFrame(buffer: buffer, timestampNs: now))
            return true
        case .success(nil):
            eventSink.yield(.ended)
            return false
        case .failure(let error):
            eventSink.yield(.failed(error))
            return false
        }
    }

    private static func next(from reader: FileReader, loop: Bool) throws -> VideoFrameBuffer? {
        if let buffer = try reader.readFrame() { return buffer }
        guard loop, reader.framesRead > 0 else { return nil }   // an empty file must not spin
        try reader.rewind()
        return try reader.readFrame()
    }

    private func withReader<T>(_ body: (FileReader) throws -> T) throws -> T {
        try reader.withLock { slot in
            let r: FileReader
            if let existing = slot {
                r = existing
            } else {
                r = try FileReader.open(path: path)
                slot = r
            }
            return try body(r)
        }
    }
}

/// The two kinds of file behind one face.
final class FileReader: @unchecked Sendable {
    // @unchecked: used only under FileVideoCapturer's reader lock.
    private enum Kind {
        case y4m(Y4MReader)
        case libav(LibAVVideoReader)
    }
    private let kind: Kind

    private init(_ kind: Kind) { self.kind = kind }

    /// Y4M by its magic bytes, everything else through libav.
    static func open(path: String) throws -> FileReader {
        guard let f = fopen(path, "rb") else {
            throw MediaError("\(path): cannot open: \(String(cString: strerror(errno)))")
        }
        var magic = [UInt8](repeating: 0, count: 9)
        let n = fread(&magic, 1, magic.count, f)
        var st = stat()
        let isDirectory = fstat(fileno(f), &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
        fclose(f)
        if isDirectory { throw MediaError("\(path): is a directory, not a video file") }
        if n == 0 { throw MediaError("\(path): file is empty") }
        if n == magic.count && magic == Array("YUV4MPEG2".utf8) {
            return FileReader(.y4m(try Y4MReader(path: path)))
        }
        return FileReader(.libav(try LibAVVideoReader(path: path)))
    }

    var width: Int {
        switch kind { case .y4m(let r): r.width; case .libav(let r): r.width }
    }
    var height: Int {
        switch kind { case .y4m(let r): r.height; case .libav(let r): r.height }
    }
    var frameRate: Double {
        switch kind { case .y4m(let r): r.frameRate; case .libav(let r): r.frameRate }
    }
    var framesRead: Int {
        switch kind { case .y4m(let r): r.framesRead; case .libav(let r): r.framesRead }
    }
    func readFrame() throws -> VideoFrameBuffer? {
        switch kind { case .y4m(let r): try r.readFrame(); case .libav(let r): try r.readFrame() }
    }
    func rewind() throws {
        switch kind { case .y4m(let r): try r.rewind(); case .libav(let r): try r.rewind() }
    }
}
