import Foundation
import SwiftRTC

/// What `play` and `p2p` do with the media they receive: renderers (stats, the test-pattern
/// check, `--record` MP4/WebM/MKV or raw Y4M, `--snapshot` PNG, `--window`), an audio meter, the status line and
/// the `--stats-json` summary with the same keys for both. Any thread (p2p attaches from its
/// event task while the main loop shows status).
final class RemotePlayback: @unchecked Sendable {
    // @unchecked: the mutable state below is behind `lock`; the renderers are thread-safe.
    private let lock = NSLock()
    let stats = StatsRenderer()
    let checker = PatternChecker()
    let audioMeter = AudioMeter()
    let y4m: Y4MFileRenderer?
    /// `--record out.mp4|webm|mkv`: the received stream as it came, audio included.
    let recorder: Recorder?
    let png: PNGSnapshotRenderer?
    let sdl: SDLWindowRenderer?
    private var video: VideoTrack?
    private var audio: AudioTrack?
    private var meter = RateMeter()
    private var snapshotRequested = false

    init(record: String?, snapshot: String?, window: Bool, title: String) throws {
        (y4m, recorder) = try RecordOption.open(record)
        png = snapshot.map { PNGSnapshotRenderer(path: $0) }
        sdl = window ? try SDLWindowRenderer(title: title, width: 1280, height: 720) : nil
    }

    private var renderers: [any VideoRenderer] { [stats, checker] + [y4m as (any VideoRenderer)?, png, sdl].compactMap { $0 } }

    func attach(video: VideoTrack?, audio: AudioTrack?) {
        lock.withLock {
            detachLocked()
            self.video = video
            self.audio = audio
            for r in renderers { video?.addRenderer(r) }
            audio?.addSink(audioMeter)
        }
    }

    /// One status line; asks for the end-of-run snapshot within the last 1.3 s before `stopAt`.
    func status(_ report: StatsReport, state: String, elapsed: Double, stopAt: Double?) -> String {
        lock.withLock {
            if let stopAt, !snapshotRequested, now() >= stopAt - 1.3 {
                png?.snapshot()
                snapshotRequested = true
            }
            return playerStatus(report, state: state, elapsed: elapsed, meter: &meter)
        }
    }

    private func detachLocked() {
        for r in renderers { video?.removeRenderer(r) }
        audio?.removeSink(audioMeter)
        video = nil
        audio = nil
    }

    func finish() {
        lock.withLock { detachLocked() }
        y4m?.close()
        if let recorder { RecordOption.finish(recorder) }
        png?.waitUntilIdle()
        sdl?.close()
    }

    /// Frames decoded: the receiver's count, else what the renderers saw.
    func framesDecoded(_ report: StatsReport) -> Int {
        let inbound = report.ofType("inbound-rtp").first { $0["kind"] == .string("video") }
        return inbound?.int("framesDecoded") ?? stats.snapshot().framesRendered
    }

    /// The last line of a run: frames, size, the pattern check, the recording.
    func resultLine(_ report: StatsReport) -> String {
        let render = stats.snapshot()
        let pattern = checker.result
        let frames = framesDecoded(report)
        return "\(frames > 0 ? "done" : "FAILED") — \(frames) frames \(render.width ?? 0)x\(render.height ?? 0)"
            + (pattern.read > 0 ? ", test pattern read on \(pattern.read) (\(pattern.verified ? "verified" : "NOT verified"))" : "")
            + (y4m.map { ", \($0.framesWritten) frames to \($0.path)" } ?? "")
            + (recorder.map { ", " + RecordOption.describe($0) } ?? "")
    }

    /// `--stats-json`: the keys `play` has always written.
    func summary(_ report: StatsReport, connectMs: Double, started: Double, state: String) -> [String: Any] {
        let inbound = report.ofType("inbound-rtp").first { $0["kind"] == .string("video") }
        let render = stats.snapshot()
        let pattern = checker.result
        let startInstant = ContinuousClock.now.advanced(by: .seconds(-(now() - started)))
        let firstFrameMs = render.firstFrameArrival.map { ($0 - startInstant).milliseconds }
        // Wall clock, as the stats' timestamps: a test can count what the sender sent from then on.
        let firstFrameUnixMs = render.firstFrameArrival.map { Date().timeIntervalSince1970 * 1000 - (ContinuousClock.now - $0).milliseconds }
        var summary: [String: Any] = [
            "connectMs": connectMs, "firstFrameMs": firstFrameMs ?? NSNull(), "firstFrameUnixMs": firstFrameUnixMs ?? NSNull(),
            "framesDecoded": framesDecoded(report),
            "frameWidth": render.width ?? 0, "frameHeight": render.height ?? 0,
            "patternFrames": pattern.read, "patternVerified": pattern.verified,
            "patternLatencyMsMedian": pattern.medianLatencyMs ?? NSNull(),
            "audioFramesDecoded": audioMeter.frames, "audioEnergyDb": audioMeter.energyDb,
            "state": state, "stats": report.jsonObject,
        ]
        summary.merge(checker.quality) { current, _ in current }
        if let inbound { summary["inbound"] = StatsReport.json(inbound) }
        if let recorder { summary["recording"] = RecordOption.json(recorder) }
        return summary
    }
}
