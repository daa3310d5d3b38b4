import Foundation
import SwiftRTC

/// `swiftrtc publish URL`: the reference app's publisher.
enum PublishCommand {
    static let usage = """
    usage: swiftrtc publish URL [--source testsrc|file:PATH|camera[:ID]] [--codec h264|vp8] [--size WxH] [--fps N]
                                [--bitrate KBPS] [--min-bitrate KBPS] [--max-fps N] [--degradation PREF]
                                [--adapt WxH[@FPS]] [--audio tone|file:PATH|mic[:ID]|none]
                                [--audio-processing all|none|aec,agc,ns,hpf]
                                [--simulcast [--layers 1,2,4]] [--scalability L1T3] [--beauty 0..1] [--disable-after SEC] [--duration SEC] [--stats-json PATH] [--record PATH] [--token T] [--api URL]
                                [--insecure] [--no-trickle] [--reconnect on|off]

    Publishes video (and audio) to URL: webrtc://HOST[:PORT]/APP/STREAM speaks SRS's API,
    http(s)://… speaks WHIP. Shows a live status line; exit code 0 only on success.

      --source S          testsrc (default: a moving test pattern carrying frame numbers) or file:PATH
                          (Y4M, MP4, MKV, WebM…; loops) or camera[:ID] (see below; then stdin takes
                          camera commands: switch, photo PATH, zoom 2, torch on, … one per line)
      --codec C           h264 (default) or vp8
      --size WxH          capture size (default 1280x720)      --fps N   capture rate (default 30)
      --bitrate KBPS      the sender's maxBitrate               --max-fps N   the sender's maxFramerate
      --min-bitrate KBPS  the sender's minBitrate (the bandwidth estimate never takes the encoder below it)
      --simulcast         send simulcast: one encoder per layer, the estimate split across them lowest
                          first (a layer that does not fit is switched off); a server that refuses it
                          (SRS) gets the largest layer alone, and this says so. --bitrate caps the
                          largest layer, --min-bitrate the smallest, --max-fps every one
      --layers LIST       with --simulcast: each layer's size as a divisor of the capture size
                          (default 1,2,4: rids h, m, l; 2 to 4 layers)
      --scalability M     temporal layers, W3C scalabilityMode: L1T1 (default), L1T2 or L1T3 (VP8 or H.264;
                          a relay can then send a viewer half or a quarter (H.264: half) of the frames without
                          a keyframe)
      --degradation PREF  what gives way when bandwidth is short: maintain-framerate (lower resolution),
                          maintain-resolution (lower frame rate) or balanced (default: both)
      --adapt WxH[@FPS]   VideoSource.adaptOutputFormat
      --audio A           tone (default), file:PATH (WAV), mic[:ID] (a microphone; `swiftrtc devices`
                          lists them; stdin `mute` / `unmute` while streaming) or none
      --audio-processing P  for mic: all (default: echo cancellation, gain control, noise
                          suppression, high-pass), none, or a list of aec,agc,ns,hpf
      --beauty S          beauty filter strength 0…1 (default off)
      --disable-after SEC disable the video track after SEC seconds (black frames from then on)
      --duration SEC      stop after SEC seconds (default: until Ctrl-C)
      --stats-json PATH   write the final W3C stats and a summary
      --record PATH       what is sent, as the encoders made it (with audio): .mp4 (H.264), .webm (VP8)
                          or .mkv (either)
      --api URL          SRS API URL for webrtc:// URLs (default http://HOST:1985/rtc/v1/…)
      --token T           WHIP bearer token
      --insecure          accept any https certificate (self-signed included); not verified, warned
    \(whipUsage)
    \(IceOptions.usage)
    camera flags (with --source camera):
    \(CameraOptions.usage)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc publish", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let sourceSpec = try a.option("source") ?? "testsrc"
        let camera = CameraOptions.isCamera(sourceSpec) ? try CameraOptions.parse(&a, source: sourceSpec) : nil
        let codecName = try a.option("codec") ?? "h264"
        let size = try a.option("size", default: (width: 1280, height: 720), parseSize)
        let fps = try a.number("fps", default: 30.0, in: 1...120)
        // kbit/s: 10 kbit/s … 100 Mbit/s (beyond either end is a typo, not a setting).
        let bitrate: Int? = try a.number("bitrate", in: 10...100_000)
        let maxFps: Double? = try a.number("max-fps", in: 0.1...120)
        let minBitrate: Int? = try a.number("min-bitrate", in: 10...100_000)
        let degradation = try a.option("degradation", default: DegradationPreference.balanced) { DegradationPreference(rawValue: $0) }
        let adapt = try a.option("adapt", default: (width: Int, height: Int, fps: Int)?.none) { text in
            let parts = text.split(separator: "@")
            guard let size = parseSize(String(parts[0])) else { return nil }
            let f = parts.count > 1 ? Int(parts[1]) : 30
            guard let f, (1...120).contains(f), parts.count <= 2 else { return nil }
            return (size.width, size.height, f)
        }
        let audioSpec = try a.option("audio") ?? "tone"
        let processing = try a.option("audio-processing", default: AudioProcessingOptions.all, AudioOptions.parseProcessing)
        let simulcast = a.flag("simulcast")
        let layers = try a.option("layers", default: [1.0, 2, 4], SimulcastOption.parseLayers)
        let scalability = try a.option("scalability")
        let beauty = try a.number("beauty", default: 0.0, in: 0...1)
        let disableAfter: Double? = try a.number("disable-after", in: 0...maxSeconds)
        let duration: Double? = try a.number("duration", in: 0.001...maxSeconds)
        let statsPath = try a.option("stats-json")
        let record = try a.option("record")
        var options = try parseSessionOptions(&a)
        let url = try a.positional("URL")
        try a.finish()
        warnIfInsecure(options)
        let codec: RtpCodecCapability
        switch codecName.lowercased() {
        case "h264": codec = .h264
        case "vp8": codec = .vp8
        default: throw UsageError("swiftrtc publish: --codec must be h264 or vp8, not \"\(codecName)\"")
        }
        if let scalability {
            guard RtpEncodingParameters.scalabilityModes[scalability] != nil else {
                throw UsageError("swiftrtc publish: --scalability must be L1T1, L1T2 or L1T3, not \"\(scalability)\"")
            }
        }
        if let record, let container = RecordingContainer(path: record) {
            let type: VideoCodecType = codec.mimeType.lowercased().hasSuffix("vp8") ? .vp8 : .h264
            guard container.supports(type) else {
                throw UsageError("swiftrtc publish: --record \(record): \(type.rawValue) does not go in .\(container.rawValue); use \(RecordingContainer.suggestion(for: type))")
            }
        } else if let record, record.lowercased().hasSuffix(".y4m") {
            throw UsageError("swiftrtc publish: --record \(record): publish records what it sends (.mp4, .webm, .mkv); .y4m is for play")
        }
        let (_, recorder) = try RecordOption.open(record)

        // Capture → processors → source → track.
        let source = VideoSource()
        if beauty > 0 { source.processors.append(BeautyFilter(strength: beauty)) }
        if let adapt { source.adaptOutputFormat(width: adapt.width, height: adapt.height, fps: adapt.fps) }
        let videoTrack = VideoTrack(id: "video0", source: source)
        let capture = try makeVideoCapturer(sourceSpec, camera: camera, command: "swiftrtc publish", source: source,
                                            width: size.width, height: size.height, fps: fps)
        let audio = try AudioCapture(audioSpec, processing: processing, tone: (440, 0.25), command: "swiftrtc publish")
        let audioTrack = audio.track
        options.videoCodecs = [codec]
        if simulcast { options.videoEncodings = SimulcastOption.encodings(layers) }
        let session = try StreamingSession(role: .publish, url: url, options: options)
        if let recorder { session.forEachConnection { recorder.record(sending: $0) } }
        let started = now()
        say("publish: \(url) (\(codec.name), \(size.width)x\(size.height)@\(Int(fps)), audio \(audioSpec))")
        do {
            try await session.publish(video: videoTrack, audio: audioTrack)
        } catch {
            await session.close()
            throw error
        }
        let connectMs = (now() - started) * 1000
        if let video = session.peerConnection.transceivers.first(where: { $0.kind == .video }) {
            var p = video.sender.parameters
            // One encoding, or with simulcast: the largest layer's cap, the smallest's floor.
            let largest = video.sender.encodingIndex
            let smallest = p.encodings.indices.max { (p.encodings[$0].scaleResolutionDownBy ?? 1) < (p.encodings[$1].scaleResolutionDownBy ?? 1) } ?? 0
            p.encodings[largest].maxBitrate = bitrate.map { $0 * 1000 }
            for i in p.encodings.indices {
                p.encodings[i].maxFramerate = maxFps
                p.encodings[i].scalabilityMode = scalability
            }
            p.encodings[smallest].minBitrate = minBitrate.map { $0 * 1000 }
            p.degradationPreference = degradation
            try video.sender.setParameters(p)
            if simulcast { say("publish: " + SimulcastOption.describe(video.sender, width: size.width, height: size.height)) }
        }
        try await capture.start()
        try audio.start()
        AudioOptions.startConsole(microphone: audio.microphone, speaker: nil, command: "publish")
        startIceConsole(session, url: url, command: "publish")
        ReconnectOptions.announce(session, command: "publish")
        say("publish: connected in \(Int(connectMs)) ms")

        let status = StatusLine()
        var meter = RateMeter()
        let stopAt = duration.map { started + connectMs / 1000 + $0 }
        let interrupted = OnceFlag()
        let waiter = Task { await waitForTermination(); _ = interrupted.fire() }
        var disabled = false
        while !interrupted.isFired {
            if let stopAt, now() >= stopAt { break }
            if session.isStopped { break }
            if let disableAfter, !disabled, now() - started - connectMs / 1000 >= disableAfter {
                videoTrack.isEnabled = false
                disabled = true
            }
            try? await Task.sleep(for: .milliseconds(250))
            let report = await session.stats()
            // With simulcast: the largest layer's size and frames, every layer's bytes.
            let video = report.ofType("outbound-rtp").filter { $0["kind"] == .string("video") }
            let out = video.max { ($0.int("frameWidth") ?? 0) < ($1.int("frameWidth") ?? 0) }
            // The receiver's report on the stream shown (with simulcast each layer has its own).
            let reports = report.ofType("remote-inbound-rtp")
            let remote = reports.first { $0.string("localId") == out?.id } ?? reports.first
            let bytes = video.reduce(0) { $0 + ($1.int("bytesSent") ?? 0) }
            let rate = meter.update(time: now(), frames: out?.int("framesEncoded") ?? 0, bytes: bytes)
            status.show(formatStatus(state: session.status, elapsed: now() - started,
                                     fps: rate.fps, width: out?.int("frameWidth") ?? 0, height: out?.int("frameHeight") ?? 0,
                                     kbps: rate.kbps, rtt: remote?.double("roundTripTime"), loss: remote?.double("fractionLost"))
                        + senderExtras(report))
            try? await Task.sleep(for: .milliseconds(750))
        }
        waiter.cancel()
        status.finish()
        await capture.stop()
        audio.stop()
        if let recorder {
            RecordOption.finish(recorder)
            say("publish: " + RecordOption.describe(recorder))
        }
        let report = await session.stats()
        let state = session.peerConnection.connectionState
        let out = report.ofType("outbound-rtp").first { $0["kind"] == .string("video") }
        let codecStats = report.ofType("codec").first { $0["mimeType"].map { "\($0)".hasPrefix("video/") } ?? false }
        let ok = state == .connected && (out?.int("framesEncoded") ?? 0) > 0
        say("publish: \(ok ? "done" : "FAILED") — \(out?.int("framesEncoded") ?? 0) frames, \((out?.int("bytesSent") ?? 0) / 1000) kB, state \(state.rawValue)")
        if let statsPath {
            var summary: [String: Any] = [
                "connectMs": connectMs, "framesEncoded": out?.int("framesEncoded") ?? 0,
                "framesSent": out?.int("framesEncoded") ?? 0, "frameWidth": out?.int("frameWidth") ?? 0,
                "frameHeight": out?.int("frameHeight") ?? 0, "bytesSent": out?.int("bytesSent") ?? 0,
                "codec": codecStats.flatMap { $0["mimeType"]?.description } ?? "", "state": state.rawValue,
                "stats": report.jsonObject,
            ]
            if let out { summary["outbound"] = StatsReport.json(out) }
            summary["targetBitrate"] = out?.int("targetBitrate") ?? 0
            summary["availableOutgoingBitrate"] = report.ofType("candidate-pair").compactMap { $0.int("availableOutgoingBitrate") }.first ?? NSNull()
            summary["qualityLimitationResolutionChanges"] = out?.int("qualityLimitationResolutionChanges") ?? 0
            summary["retransmittedPacketsSent"] = out?.int("retransmittedPacketsSent") ?? 0
            summary["trickledCandidates"] = session.trickledCandidates
            if simulcast { summary["layers"] = SimulcastOption.json(report) }
            if let mic = audio.microphone { summary["microphone"] = AudioOptions.json(mic.stats) }
            if let recorder { summary["recording"] = RecordOption.json(recorder) }
            try writeJSON(summary, to: statsPath)
        }
        await session.close()
        return ok ? 0 : 1
    }
}
