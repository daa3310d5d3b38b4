import Foundation
import SwiftRTC

/// `swiftrtc demo`: the main job on the embedded relay, on loopback. Publishes the test pattern
/// (H.264 1280x720@30 + a tone), plays it back, checks every frame's embedded number, and writes
/// a PNG snapshot and the stats. Exit code 0 only if the played frames were verified.
enum DemoCommand {
    static let usage = """
    usage: swiftrtc demo [--camera] [--duration SEC] [--out DIR] [--http HOST:PORT] [--udp HOST:PORT]

    Starts the relay (swiftrtc serve) on loopback, publishes the test pattern (H.264 1280x720@30
    plus a 440 Hz tone) to webrtc://…/live/demo, plays it back, shows a status line, and writes
    DIR/snapshot.png and DIR/stats.json (default DIR: artifacts/demo). While it runs, open the
    printed player page in a browser and press Play to watch the same stream.

      --camera         publish the synthetic camera instead, touring its controls (zoom, white
                       balance, exposure bias, faces with exposure on the largest, switch to the
                       back camera, torch, ISO) with a PNG of the played picture after each:
                       DIR/camera-N-STEP.png
      --duration SEC   how long to play (default 10)
      --out DIR        where to write the snapshot and stats (default artifacts/demo)
      --http HOST:PORT relay HTTP (default 127.0.0.1:1985, or any free port if that is taken)
      --udp HOST:PORT  relay UDP (default 127.0.0.1:8000, or any free port)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc demo", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let camera = a.flag("camera")
        let duration = try a.number("duration", default: 10.0, in: 0.001...maxSeconds)
        let out = try a.option("out") ?? "artifacts/demo"
        let http = try a.option("http", default: (host: "127.0.0.1", port: UInt16(1985)), parseHostPort)
        let udp = try a.option("udp", default: (host: "127.0.0.1", port: UInt16(8000)), parseHostPort)
        try a.finish()
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)

        let relay: RelayServer
        // `log:` by label: the same call with a trailing closure compiled (Swift 6.3.1) into a
        // crash on the relay's first use (a null object from the async convenience init).
        do {
            relay = try await RelayServer(httpHost: http.host, httpPort: http.port, udpHost: udp.host, udpPort: udp.port, log: { _ in })
        } catch {
            say("demo: \(http.host):\(http.port) or UDP \(udp.port) is taken (\(error)); using free ports")
            relay = try await RelayServer(httpHost: http.host, httpPort: 0, udpHost: udp.host, udpPort: 0, log: { _ in })
        }
        let streamURL = "webrtc://\(relay.httpHost):\(relay.httpPort)/live/demo"
        say("demo: relay on \(relay.url) (UDP \(relay.advertisedAddress)); player page: \(relay.url)/players/ (app live, stream demo)")

        // Publisher: test pattern (or the synthetic camera with the pattern's band burned in) + tone, H.264 720p30.
        let source = VideoSource()
        let videoTrack = VideoTrack(id: "demo-video", source: source)
        let patternCapturer = camera ? nil : TestPatternCapturer(delegate: source)
        let synthetic = SyntheticCameraBackend()
        let cameraCapturer = camera ? CameraCapturer(backend: synthetic, delegate: source) : nil
        if camera { source.processors.append(MarkerStamp()) }
        let tone = ToneCapturer(frequency: 440, level: 0.2)
        let audioTrack = AudioTrack(id: "demo-audio", source: AudioSource(capturer: tone))
        let publisher = try StreamingSession(role: .publish, url: streamURL)
        let started = now()
        try await publisher.publish(video: videoTrack, audio: audioTrack)
        try patternCapturer?.start(width: 1280, height: 720, fps: 30)
        try await cameraCapturer?.startCapture(device: SyntheticDevices.front, width: 1280, height: 720, fps: 30)
        tone.start()
        say("demo: publishing \(streamURL) (connected in \(Int((now() - started) * 1000)) ms)")

        // Player: decode, verify the embedded frame numbers, snapshot.
        let player = try StreamingSession(role: .play, url: streamURL)
        let playStarted = now()
        let tracks = try await player.play()
        let connectMs = (now() - playStarted) * 1000
        let checker = PatternChecker()
        let stats = StatsRenderer()
        let snapshotPath = out + "/snapshot.png"
        let png = PNGSnapshotRenderer(path: snapshotPath)
        let audioMeter = AudioMeter()
        for r in [checker, stats, png] as [any VideoRenderer] { tracks.video?.addRenderer(r) }
        tracks.audio?.addSink(audioMeter)

        let status = StatusLine()
        var meter = RateMeter()
        let end = now() + duration
        var snapshotTaken = false
        var tour = cameraCapturer.map { CameraTour(capturer: $0, backend: synthetic, out: out, start: now(), duration: duration) }
        while now() < end {
            if player.peerConnection.connectionState == .failed { break }
            try? await Task.sleep(for: .milliseconds(500))
            if let line = await tour?.step(now: now(), video: tracks.video) {
                status.finish()
                say(line)
            }
            if !snapshotTaken && now() > end - duration / 2 {
                png.snapshot()
                snapshotTaken = true
            }
            let report = await player.stats()
            status.show(playerStatus(report, state: player.peerConnection.connectionState.rawValue,
                                     elapsed: now() - playStarted, meter: &meter))
        }
        status.finish()
        patternCapturer?.stop()
        await cameraCapturer?.stopCapture()
        tone.stop()
        png.waitUntilIdle()
        tour?.finish()
        let report = await player.stats()
        let inbound = report.ofType("inbound-rtp").first { $0["kind"] == .string("video") }
        let pattern = checker.result
        let render = stats.snapshot()
        let verified = pattern.verified && pattern.read >= Int(duration * 20)
        let summary: [String: Any] = [
            "verified": verified, "connectMs": connectMs,
            "firstFrameMs": render.timeToFirstFrame.map { $0.milliseconds } ?? NSNull(),
            "framesDecoded": inbound?.int("framesDecoded") ?? 0, "frameWidth": render.width ?? 0, "frameHeight": render.height ?? 0,
            "patternFrames": pattern.read, "patternVerified": pattern.verified,
            "patternLatencyMsMedian": pattern.medianLatencyMs ?? NSNull(),
            "audioFramesDecoded": audioMeter.frames, "audioEnergyDb": audioMeter.energyDb,
            "relayStreams": await relay.streams(), "stats": report.jsonObject,
        ]
        try writeJSON(summary, to: out + "/stats.json")
        say("demo: \(verified ? "VERIFIED" : "NOT VERIFIED") — \(pattern.read) frames \(render.width ?? 0)x\(render.height ?? 0) with their numbers in order, "
            + "median latency \(pattern.medianLatencyMs.map { "\(Int($0)) ms" } ?? "?"), audio \(String(format: "%.1f", audioMeter.energyDb)) dBFS; "
            + "wrote \(snapshotPath)\(camera ? ", the camera tour's PNGs" : "") and \(out)/stats.json")
        await player.close()
        await publisher.close()
        await relay.stop()
        return verified ? 0 : 1
    }
}

/// The camera demo's walk through the controls: one step every duration/8 seconds, each applied
/// to the running camera and followed (half a step later) by a PNG of the next frame the player
/// decodes.
struct CameraTour {
    let capturer: CameraCapturer
    let backend: SyntheticCameraBackend
    let out: String
    let start: Double
    let interval: Double
    private var index = 0
    private var pendingName: String?
    private var snapshots: [(PNGSnapshotRenderer, VideoTrack)] = []

    static let steps: [(name: String, settings: [CameraSetting], switchTo: CameraPosition?)] = [
        ("front", [], nil),
        ("zoom2x", [.zoom(2)], nil),
        ("white-balance-3000K", [.zoom(1), .whiteBalanceTemperature(3000)], nil),
        ("exposure-bias+1.5", [.whiteBalanceMode(.continuousAuto), .exposureBias(1.5)], nil),
        ("faces", [.exposureBias(0)], nil),
        ("back", [], .back),
        ("torch-iso800", [.torch(.on), .iso(800)], nil),
        ("focus-near", [.exposureMode(.continuousAuto), .torch(.off), .focusPosition(0)], nil),
    ]

    init(capturer: CameraCapturer, backend: SyntheticCameraBackend, out: String, start: Double, duration: Double) {
        self.capturer = capturer
        self.backend = backend
        self.out = out
        self.start = start
        self.interval = duration / Double(Self.steps.count + 1)
    }

    /// Applies the next step when its time has come; returns a line saying what it did.
    mutating func step(now: Double, video: VideoTrack?) async -> String? {
        if let name = pendingName, let video, now >= start + (Double(index) - 0.5) * interval {
            // A new renderer saves the first frame it sees: one decoded after the step took effect.
            let png = PNGSnapshotRenderer(path: "\(out)/camera-\(index)-\(name).png")
            video.addRenderer(png)
            snapshots.append((png, video))
            pendingName = nil
        }
        guard index < Self.steps.count, now >= start + Double(index) * interval else { return nil }
        let step = Self.steps[index]
        index += 1
        var done: [String] = []
        do {
            if let position = step.switchTo {
                try await capturer.switchCamera(position: position)
                done.append("switched to the \(position.rawValue) camera")
            }
            for s in step.settings { done.append("\(try await capturer.set(s))") }
            if step.name == "faces" { done.append(await showFaces()) }
        } catch {
            return "demo: camera step \(step.name) failed: \(error)"
        }
        pendingName = step.name
        return "demo: camera \(step.name): \(done.isEmpty ? "as it starts" : done.joined(separator: ", "))"
    }

    /// The faces step: a visitor walks in and out, faces are reported (entering and leaving from
    /// now on, on the console) and exposure follows the largest.
    private func showFaces() async -> String {
        backend.faces = [.subject, .visitor]
        let events = capturer.events()
        Task {
            for await e in events {
                switch e {
                case .faceEntered, .faceLeft: say("demo: camera \(e)")
                default: break
                }
            }
        }
        capturer.setFaceDetection(FaceDetectionOptions())
        await capturer.setExposurePolicy(.faces)
        return "face detection on, exposure and focus on the largest face"
    }

    func finish() {
        for (png, video) in snapshots {
            video.removeRenderer(png)
            png.waitUntilIdle()
        }
    }
}
