import Dispatch
import Foundation
import Recording
import Transport

/// `swiftrtc serve --record DIR [--record-segment SEC] [--record-format mp4|webm|mkv]`.
public struct RecordingOptions: Sendable {
    /// Files go to DIRECTORY/APP/STREAM/<start time>.<ext> (made as needed).
    public var directory: String
    /// A new file at the first keyframe after this long; nil: one file per publisher session.
    public var segment: Duration?
    /// nil: .mp4 for H.264, .webm for VP8. A container that cannot hold the codec gives .mkv.
    public var format: RecordingContainer?
    /// After a failed write (disk full, directory gone), how long before a new file is tried.
    public var retryAfter: Duration

    public init(directory: String, segment: Duration? = nil, format: RecordingContainer? = nil, retryAfter: Duration = .seconds(5)) {
        self.directory = directory
        self.segment = segment
        self.format = format
        self.retryAfter = retryAfter
    }
}

/// A file the DVR finished (what `on_dvr` tells the hook).
struct RecordedFile: Sendable {
    let app: String
    let stream: String
    let path: String
    let client: String
    let ip: String
    let param: String
    /// Filled in when the file is closed.
    var statistics: Recorder.Statistics?
}

/// The relay's DVR: its options, file names, and the one queue recorders are closed on —
/// closing writes the trailer and waits for the recorder's own queue, which must not hold up
/// the relay's loop.
final class RelayDVR: Sendable {
    let options: RecordingOptions
    /// `options.directory` made absolute (the hook gets absolute paths).
    let directory: String
    let loop: EventLoop
    let log: @Sendable (String) -> Void
    /// Called on the closing queue for every file that was started, once it is complete.
    let onClosed: @Sendable (RecordedFile) -> Void
    private let closer = DispatchQueue(label: "swiftrtc.relay.dvr", qos: .utility)
    /// Wall time and loop time at the start: file names carry the wall time of the loop
    /// instant a file starts (so names follow virtual time on a simulated loop too).
    private let wallOrigin = Date()
    private let loopOrigin: ContinuousClock.Instant

    init(options: RecordingOptions, loop: EventLoop, log: @escaping @Sendable (String) -> Void,
         onClosed: @escaping @Sendable (RecordedFile) -> Void) {
        self.options = options
        directory = URL(fileURLWithPath: options.directory).standardizedFileURL.path
        self.loop = loop
        self.log = log
        self.onClosed = onClosed
        loopOrigin = loop.now
    }

    /// Finishes `recorder` off the loop, then reports the file if it was ever created.
    func close(_ recorder: Recorder, _ file: RecordedFile) {
        closer.async { [onClosed] in
            var file = file
            file.statistics = recorder.close()
            if file.statistics?.started == true { onClosed(file) }
        }
    }

    /// Returns once every close queued so far is done (and reported).
    func idle() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in closer.async { done.resume() } }
    }

    /// DIRECTORY/APP/STREAM
    func folder(app: String, stream: String) -> String { "\(directory)/\(app)/\(stream)" }

    /// `2026-12-02T10-15-30.123Z` for a loop instant: UTC, sortable, no colons.
    func stamp(at instant: ContinuousClock.Instant) -> String {
        let elapsed = instant - loopOrigin
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let ms = Int64((wallOrigin.timeIntervalSince1970 + seconds) * 1000)
        var t = time_t(ms / 1000)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d-%02d-%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ms % 1000))
    }
}

extension RelayServer {
    /// What happens to a finished file: a log line, and `on_dvr` to the hook (SRS's body plus
    /// `cwd` and `file`; its answer changes nothing, and a failing hook is only logged).
    static func recordedFile(policy: AccessPolicy, log: @escaping @Sendable (String) -> Void) -> @Sendable (RecordedFile) -> Void {
        { file in
            guard let s = file.statistics else { return }
            log("serve: recorded \(file.app)/\(file.stream) to \(file.path): \(s.videoFrames) video frames, \(s.audioPackets) audio packets, "
                + String(format: "%.1f s", s.duration) + (s.error.map { " (cut short: \($0))" } ?? ""))
            guard policy.hook != nil else { return }
            let cwd = FileManager.default.currentDirectoryPath
            Task {
                if let failure = await policy.notifyHook(action: "on_dvr", app: file.app, stream: file.stream, param: file.param, ip: file.ip,
                                                         client: file.client, extra: ["cwd": cwd, "file": file.path]) {
                    log("serve: \(failure)")
                }
            }
        }
    }
}
