import Foundation
import SwiftRTC

/// `swiftrtc call URL_SELF URL_PEER`: the reference app's video call through SRS — publish our
/// own stream, play the other side's.
enum CallCommand {
    static let usage = """
    usage: swiftrtc call URL_SELF URL_PEER [--source testsrc|file:PATH|camera[:ID]] [--size WxH] [--fps N] [--window]
                         [--audio tone|file:PATH|mic[:ID]|none] [--audio-processing P] [--speaker ID|none]
                         [--duration SEC] [--stats-json PATH] [--record PATH] [--insecure] [--reconnect on|off]

    A video call through a server: publishes our video and audio to URL_SELF and plays URL_PEER
    (webrtc:// for SRS's API, http(s):// for WHIP/WHEP). The peer does the same with the URLs
    swapped. Waits up to 30 s for the peer's stream to appear. Exit code 0 only if the peer's
    video was decoded.

      --source S       testsrc (default), file:PATH or camera[:ID] (with the camera flags of
                       `swiftrtc publish --help`)          --size WxH (default 640x360)   --fps N (default 30)
      --audio A        tone (default), file:PATH, mic[:ID] or none; stdin `mute` / `unmute`
      --audio-processing P  for mic: all (default), none, or aec,agc,ns,hpf; the echo canceller's
                       reference is what the speaker plays
      --speaker ID|none  where the peer's audio plays (default: the default output if any); stdin
                       `speaker ID|default`, `volume 0..1`
      --window         show local preview and remote video in windows (SDL2)
      --duration SEC   call length (default: until Ctrl-C)
      --stats-json P   write both sessions' stats and a summary
      --record PATH    the peer's stream: .mp4 (H.264), .webm (VP8), .mkv (either) with its audio,
                       not re-encoded; .y4m: decoded frames, raw
      --insecure       accept any https certificate (self-signed included); not verified, warned
    \(ReconnectOptions.usage)
    \(IceOptions.usage)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc call", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let sourceSpec = try a.option("source") ?? "testsrc"
        let camera = CameraOptions.isCamera(sourceSpec) ? try CameraOptions.parse(&a, source: sourceSpec) : nil
        let size = try a.option("size", default: (width: 640, height: 360), parseSize)
        let fps = try a.number("fps", default: 30.0, in: 1...60)
        let window = a.flag("window")
        let duration: Double? = try a.number("duration", in: 0.001...maxSeconds)
        let statsPath = try a.option("stats-json")
        let record = try a.option("record")
        let audioSpec = try a.option("audio") ?? "tone"
        let processing = try a.option("audio-processing", default: AudioProcessingOptions.all, AudioOptions.parseProcessing)
        let speakerSpec = try a.option("speaker")
        let selfURL = try a.positional("URL_SELF")
        let peerURL = try a.positional("URL_PEER")
        let insecure = a.flag("insecure")
        let reconnect = try ReconnectOptions.parse(&a)
        let ice = try IceOptions.parse(&a, command: "swiftrtc call")
        try a.finish()
        let (y4m, recorder) = try RecordOption.open(record)
        if let speakerSpec, speakerSpec != "none" { try AudioOptions.requireDevice(speakerSpec, .output, command: "swiftrtc call") }
        var options = StreamingSession.Options()
        options.insecure = insecure
        options.reconnect = reconnect
        ice.apply(to: &options.configuration)
        warnIfInsecure(options)

        let source = VideoSource()
        let videoTrack = VideoTrack(id: "call-video", source: source)
        let capture = try makeVideoCapturer(sourceSpec, camera: camera, command: "swiftrtc call", source: source,
                                            width: size.width, height: size.height, fps: fps)
        let audio = try AudioCapture(audioSpec, processing: processing, tone: (660, 0.2), command: "swiftrtc call")
        let preview: SDLWindowRenderer? = window ? try SDLWindowRenderer(title: "swiftrtc call — me", width: 320, height: 180) : nil
        if let preview { videoTrack.addRenderer(preview) }

        let started = now()
        let publisher = try StreamingSession(role: .publish, url: selfURL, options: options)
        try await publisher.publish(video: videoTrack, audio: audio.track)
        try await capture.start()
        try audio.start()
        say("call: publishing to \(selfURL)")
        ReconnectOptions.announce(publisher, command: "call: publish")

        // The peer may not be publishing yet: retry playing until its stream exists.
        var player: StreamingSession?
        var tracks: (video: VideoTrack?, audio: AudioTrack?) = (nil, nil)
        let giveUp = now() + 30
        while player == nil {
            let attempt = try StreamingSession(role: .play, url: peerURL, options: options)
            if let recorder { attempt.forEachConnection { recorder.record(receiving: $0) } }
            do {
                tracks = try await attempt.play()
                player = attempt
            } catch {
                await attempt.close()
                if now() > giveUp {
                    await capture.stop(); audio.stop(); await publisher.close()
                    throw UsageError("swiftrtc call: cannot play \(peerURL) after 30 s: \(error)")
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        guard let player else { return 1 }
        say("call: playing \(peerURL)")
        ReconnectOptions.announce(player, command: "call: play")
        let speaker: AudioPlayout?
        do {
            speaker = try AudioOptions.startSpeaker(speakerSpec, echo: audio.echo, command: "call")
        } catch {
            await capture.stop(); audio.stop(); await player.close(); await publisher.close()
            throw error
        }
        if let speaker, let remote = tracks.audio { speaker.add(remote) }
        AudioOptions.startConsole(microphone: audio.microphone, speaker: speaker, command: "call")
        let remoteStats = StatsRenderer()
        let checker = PatternChecker()
        let remoteWindow: SDLWindowRenderer? = window ? try SDLWindowRenderer(title: "swiftrtc call — peer", width: 640, height: 360) : nil
        for r in [remoteStats, checker] + [remoteWindow as (any VideoRenderer)?, y4m].compactMap({ $0 }) as [any VideoRenderer] { tracks.video?.addRenderer(r) }

        let status = StatusLine()
        var meter = RateMeter()
        let stopAt = duration.map { now() + $0 }
        let interrupted = OnceFlag()
        let waiter = Task { await waitForTermination(); _ = interrupted.fire() }
        while !interrupted.isFired {
            if let stopAt, now() >= stopAt { break }
            if player.isStopped || publisher.isStopped { break }
            try? await Task.sleep(for: .seconds(1))
            let report = await player.stats()
            let inbound = report.ofType("inbound-rtp").first { $0["kind"] == .string("video") }
            let rate = meter.update(time: now(), frames: inbound?.int("framesDecoded") ?? 0, bytes: inbound?.int("bytesReceived") ?? 0)
            status.show("peer " + formatStatus(state: player.status, elapsed: now() - started,
                                               fps: rate.fps, width: inbound?.int("frameWidth") ?? 0, height: inbound?.int("frameHeight") ?? 0,
                                               kbps: rate.kbps, rtt: nil, loss: nil))
        }
        waiter.cancel()
        status.finish()
        await capture.stop()
        audio.stop()
        speaker?.stop()
        preview?.close()
        remoteWindow?.close()
        y4m?.close()
        if let recorder {
            RecordOption.finish(recorder)
            say("call: " + RecordOption.describe(recorder))
        }
        let peerFrames = remoteStats.snapshot().framesRendered
        let pattern = checker.result
        say("call: \(peerFrames > 0 ? "done" : "FAILED") — decoded \(peerFrames) frames of the peer"
            + (pattern.read > 0 ? " (test pattern \(pattern.verified ? "verified" : "NOT verified"))" : ""))
        if let statsPath {
            var summary: [String: Any] = ["peerFramesDecoded": peerFrames, "patternFrames": pattern.read, "patternVerified": pattern.verified,
                                          "publish": (await publisher.stats()).jsonObject, "play": (await player.stats()).jsonObject]
            if let speaker { summary["playout"] = AudioOptions.json(speaker.stats, device: speaker.device) }
            if let recorder { summary["recording"] = RecordOption.json(recorder) }
            if let mic = audio.microphone { summary["microphone"] = AudioOptions.json(mic.stats) }
            if let echo = audio.echo { summary["echo"] = ["streamDelayMs": echo.streamDelayMs, "estimatedDelayMs": echo.processor.estimatedEchoDelayMs.map { $0 as Any } ?? NSNull(),
                                                         "referenceResyncs": echo.processor.echoReferenceResyncs] as [String: Any] }
            try writeJSON(summary, to: statsPath)
        }
        await player.close()
        await publisher.close()
        return peerFrames > 0 ? 0 : 1
    }
}
