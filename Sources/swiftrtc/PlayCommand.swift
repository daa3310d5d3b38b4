import Foundation
import SwiftRTC
import Locks

/// `swiftrtc play URL`: the reference app's player.
enum PlayCommand {
    static let usage = """
    usage: swiftrtc play URL [--record out.mp4|webm|mkv|y4m] [--snapshot out.png] [--window] [--duration SEC]
                             [--speaker ID|none] [--stats-json PATH] [--token T] [--api URL] [--insecure]
                             [--no-trickle] [--reconnect on|off]

    Plays a stream: webrtc://HOST[:PORT]/APP/STREAM speaks SRS's API, http(s)://… speaks WHEP.
    Decodes H.264/VP8 video and Opus audio, shows a live status line, and checks the frame
    numbers a SwiftRTC test pattern carries. Exit code 0 only if frames were decoded.

      --record PATH      .mp4 (H.264), .webm (VP8), .mkv (either): the stream with its audio, as
                         it came (no re-encoding; survives reconnections); .y4m: decoded frames, raw
      --snapshot PATH    write a PNG of a decoded frame (the first, replaced by one near the end)
      --window           show the video in a window (SDL2; needs a display)
      --duration SEC     stop after SEC seconds (default: until Ctrl-C)
      --speaker ID|none  play the audio to output ID (`swiftrtc devices` lists them); default: the
                         default output when there is one; stdin `speaker ID|default` and
                         `volume 0..1` while playing
      --stats-json PATH  write the final W3C stats and a summary
      --api URL          SRS API URL for webrtc:// URLs (default http://HOST:1985/rtc/v1/…)
      --token T          WHEP bearer token
      --insecure         accept any https certificate (self-signed included); not verified, warned
    \(whipUsage)
    \(IceOptions.usage)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc play", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let record = try a.option("record")
        let snapshot = try a.option("snapshot")
        let window = a.flag("window")
        let duration: Double? = try a.number("duration", in: 0.001...maxSeconds)
        let statsPath = try a.option("stats-json")
        let speakerSpec = try a.option("speaker")
        let options = try parseSessionOptions(&a)
        let url = try a.positional("URL")
        try a.finish()
        if let speakerSpec, speakerSpec != "none" { try AudioOptions.requireDevice(speakerSpec, .output, command: "swiftrtc play") }
        warnIfInsecure(options)

        let session = try StreamingSession(role: .play, url: url, options: options)
        let started = now()
        let playback = try RemotePlayback(record: record, snapshot: snapshot, window: window, title: "swiftrtc play \(url)")
        say("play: \(url)")
        if let recorder = playback.recorder { session.forEachConnection { recorder.record(receiving: $0) } }
        let tracks: (video: VideoTrack?, audio: AudioTrack?)
        do {
            // The recorder and checks are on the tracks before the first frame can be decoded.
            tracks = try await session.play(waitForConnection: false)
            playback.attach(video: tracks.video, audio: tracks.audio)
            try await session.waitForConnection()
        } catch {
            await session.close()
            throw error
        }
        let connectMs = (now() - started) * 1000
        say("play: connected in \(Int(connectMs)) ms")
        let speaker: AudioPlayout?
        do {
            speaker = try AudioOptions.startSpeaker(speakerSpec, echo: nil, command: "play")
        } catch {
            await session.close()
            throw error
        }
        if let speaker, let audio = tracks.audio { speaker.add(audio) }
        AudioOptions.startConsole(microphone: nil, speaker: speaker, command: "play")
        startIceConsole(session, url: url, command: "play")
        ReconnectOptions.announce(session, command: "play")

        let status = StatusLine()
        let stopAt = duration.map { started + connectMs / 1000 + $0 }
        let interrupted = OnceFlag()
        let waiter = Task { await waitForTermination(); _ = interrupted.fire() }
        while !interrupted.isFired {
            if let stopAt, now() >= stopAt { break }
            if session.isStopped { break }
            try? await Task.sleep(for: .milliseconds(250))
            let report = await session.stats()
            status.show(playback.status(report, state: session.status, elapsed: now() - started, stopAt: stopAt))
            try? await Task.sleep(for: .milliseconds(750))
        }
        waiter.cancel()
        status.finish()
        speaker?.stop()
        playback.finish()
        let report = await session.stats()
        let ok = playback.framesDecoded(report) > 0
        say("play: " + playback.resultLine(report))
        if let statsPath {
            var summary = playback.summary(report, connectMs: connectMs, started: started,
                                           state: session.peerConnection.connectionState.rawValue)
            if let speaker { summary["playout"] = AudioOptions.json(speaker.stats, device: speaker.device) }
            summary["trickledCandidates"] = session.trickledCandidates
            try writeJSON(summary, to: statsPath)
        }
        await session.close()
        return ok ? 0 : 1
    }
}

/// Reads the SwiftRTC test pattern from every frame: counts, order, gaps, freezes and latency
/// (the pattern carries its frame number and capture wall-clock time).
final class PatternChecker: VideoRenderer, Sendable {
    struct State {
        var frames = 0, read = 0, ordered = true
        var first: UInt32?, last: UInt32?
        var latencies: [Double] = []
        var lastArrival: Double?
        /// Gaps between frames longer than `freezeThreshold` seconds.
        var freezes = 0
        var freezeSeconds = 0.0
        var longestGap = 0.0
        /// The freezes themselves (the first `maxGapsListed`), for telling when video came back.
        var gaps: [FrameGap] = []
    }
    /// A freeze: monotonic seconds (CLOCK_MONOTONIC, as Python's time.monotonic()) of the frames
    /// either side, their pattern frame numbers and the age of the frame after (a stale frame
    /// would be old).
    struct FrameGap {
        var start, end: Double
        var frameBefore, frameAfter: UInt32?
        var latencyAfterMs: Double?

        var json: [String: Any] {
            ["startMonotonic": start, "endMonotonic": end, "ms": (end - start) * 1000,
             "frameBefore": frameBefore.map { Int($0) } ?? NSNull(), "frameAfter": frameAfter.map { Int($0) } ?? NSNull(),
             "latencyAfterMs": latencyAfterMs ?? NSNull()]
        }
    }
    private let state = Locked(State())
    /// A pause this long between two decoded frames counts as a freeze (what a viewer sees).
    static let freezeThreshold = 0.5
    static let maxGapsListed = 100

    func render(_ frame: VideoFrame) {
        let result = TestPattern.read(frame)
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let nowMs = UInt32(truncatingIfNeeded: (Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000))
        let arrival = now()
        state.withLock { s in
            s.frames += 1
            if let previous = s.lastArrival {
                let gap = arrival - previous
                s.longestGap = max(s.longestGap, gap)
                if gap > Self.freezeThreshold {
                    s.freezes += 1
                    s.freezeSeconds += gap
                    if s.gaps.count < Self.maxGapsListed {
                        s.gaps.append(FrameGap(start: previous, end: arrival, frameBefore: s.last, frameAfter: result?.frameNumber,
                                               latencyAfterMs: result.map { Double(Int32(bitPattern: nowMs &- $0.wallClockMs)) }))
                    }
                }
            }
            s.lastArrival = arrival
            guard let result else { return }
            s.read += 1
            if let last = s.last, result.frameNumber <= last { s.ordered = false }
            s.first = s.first ?? result.frameNumber
            s.last = result.frameNumber
            let latency = Double(Int32(bitPattern: nowMs &- result.wallClockMs))
            if s.latencies.count < 100_000 { s.latencies.append(latency) }
        }
    }

    var result: (read: Int, verified: Bool, medianLatencyMs: Double?) {
        state.withLock { s in
            let sorted = s.latencies.sorted()
            return (s.read, s.frames > 0 && Double(s.read) >= 0.9 * Double(s.frames) && s.ordered,
                    sorted.isEmpty ? nil : sorted[sorted.count / 2])
        }
    }

    /// For --stats-json: frames the sender numbered between the first and last one read that
    /// never arrived, freezes, and latency percentiles.
    var quality: [String: Any] {
        state.withLock { s in
            let sorted = s.latencies.sorted()
            func percentile(_ p: Double) -> Any { sorted.isEmpty ? NSNull() : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            let span = s.first.flatMap { first in s.last.map { Int($0 &- first) + 1 } } ?? 0
            return ["patternFramesSpan": span, "patternFramesMissing": max(0, span - s.read),
                    "freezesOver500Ms": s.freezes, "freezeSecondsOver500Ms": s.freezeSeconds,
                    "longestFrameGapMs": s.longestGap * 1000, "frameGapsOver500Ms": s.gaps.map(\.json),
                    "lastFrameMonotonic": s.lastArrival ?? NSNull(),
                    "patternLatencyMsP50": percentile(0.5), "patternLatencyMsP95": percentile(0.95)]
        }
    }
}

/// Decoded audio: frame count and RMS level in dBFS.
final class AudioMeter: AudioRenderer, Sendable {
    private let state = Locked<(frames: Int, power: Double, samples: Int)>((0, 0, 0))

    func render(_ frame: AudioFrame) {
        let samples = frame.int16Samples
        let power = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        state.withLock {
            $0.frames += 1
            $0.power += power
            $0.samples += samples.count
        }
    }

    var frames: Int { state.withLock { $0.frames } }
    var energyDb: Double {
        state.withLock { s in
            guard s.samples > 0, s.power > 0 else { return -120 }
            return 10 * log10(s.power / Double(s.samples) / (32768.0 * 32768.0))
        }
    }
}

extension Duration {
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}
