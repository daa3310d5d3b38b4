// The media rows of the report: pixel and codec micro-benchmarks, the publish pipeline against
// aiortc, capture→render latency, and the relay (connect times, fan-out, forwarding floor).
import Codecs
import Foundation
import Media

private func codecRowName(_ name: String) -> String {
    "codec." + name.lowercased().replacingOccurrences(of: ".", with: "").replacingOccurrences(of: " ", with: "_")
}

/// Rows and extra JSON of phases 4–7, in the order they ran.
@MainActor
func mediaPhases(_ options: Options) async -> (rows: [Row], extra: [String: Any]) {
    var rows: [Row] = []
    var extra: [String: Any] = [:]
    // 4. Micro-benchmarks (Media and Codecs report their own names and units).
    if options.runs("media") {
        progress("media: pixel pipeline at 720p (median of 60 runs each)")
        for r in mediaBenchmarks() {
            let beauty = r.name.hasPrefix("media.beauty")
            rows.append(Row(r.name, r.value, r.unit, target: beauty ? .atMost(5) : nil,
                            note: beauty ? "CPU time of one thread per 1280x720 I420 frame, median of 60 (strength 0.8); the colour, mirror, crop/zoom, conversion and scaling rows likewise" : nil))
        }
        progress("media: H.264 and VP8 encode/decode at 720p, 1.5 Mbps (median of 60 frames)")
        for r in codecBenchmarks() {
            rows.append(Row(codecRowName(r.name), r.value, r.unit,
                            note: r.unit == "ms/frame" ? "CPU time of one thread per frame of a moving 1280x720 picture, 30 fps, 1.5 Mbps target; median of 60" : nil))
        }
    }

    // 5. Publish pipeline CPU per frame, Swift and aiortc.
    if options.runs("pipeline") {
        let seconds = options.pipelineSeconds
        let swiftNote = "process CPU (getrusage) per encoded frame over \(Int(seconds)) s, minus the loopback sink's loop thread and the idle rate measured connected without frames: TestPatternCapturer thread 1280x720@30 -> VideoSource -> OpenH264 at a fixed 1.5 Mbps -> RTP packetizer -> SRTP (AES-CM-SHA1-80) -> UDP to a non-decoding PeerConnection on 127.0.0.1"
        progress("pipeline: Swift publish 1280x720@30 H.264, no processors (\(Int(seconds)) s)")
        var plain: PipelineResult?
        do {
            let r = try await swiftPublishCPU(beauty: nil, seconds: seconds)
            plain = r
            rows.append(Row("publish.swift.cpu_per_frame", r.cpuMsPerFrame, "ms/frame", note: swiftNote))
            extra["publish_swift"] = pipelineJSON(r)
        } catch {
            rows.append(Row("publish.swift.cpu_per_frame", nil, "ms/frame", note: "failed: \(error)"))
        }
        progress("pipeline: Swift publish with BeautyFilter(0.5) (\(Int(seconds)) s)")
        var withBeauty: PipelineResult?
        do {
            let r = try await swiftPublishCPU(beauty: 0.5, seconds: seconds)
            withBeauty = r
            rows.append(Row("publish.swift_beauty0.5.cpu_per_frame", r.cpuMsPerFrame, "ms/frame",
                            note: "the same with BeautyFilter(strength: 0.5) as the source's processor"))
            extra["publish_swift_beauty"] = pipelineJSON(r)
        } catch {
            rows.append(Row("publish.swift_beauty0.5.cpu_per_frame", nil, "ms/frame", note: "failed: \(error)"))
        }
        progress("pipeline: aiortc publish, same pattern, H.264 (libx264) 1.5 Mbps (\(options.python) \(options.aiortcPublishScript))")
        var aiortc: AiortcPublishResult?
        do {
            let r = try await aiortcPublishCPU(python: options.python, script: options.aiortcPublishScript, seconds: seconds)
            aiortc = r
            rows.append(Row("publish.aiortc.cpu_per_frame", r.cpuMsPerFrame, "ms/frame",
                            note: "aiortc 1.16 publishing the same test pattern (numpy port) at 1280x720@30 with its H.264 encoder (libx264 via PyAV, fixed 1.5 Mbps) to the same kind of Swift sink; CPU of the whole Python process (getrusage) per frame minus its idle rate"))
            var json: [String: Any] = ["cpu_ms_per_frame": r.cpuMsPerFrame, "frames": r.frames, "fps": r.fps, "kbps": r.kbps]
            if let s = r.sourceMsPerFrame { json["source_draw_ms_per_frame"] = s }
            extra["publish_aiortc"] = json
        } catch {
            rows.append(Row("publish.aiortc.cpu_per_frame", nil, "ms/frame", note: "failed: \(error)"))
        }
        let ratio = zipRatio(plain?.cpuMsPerFrame, aiortc?.cpuMsPerFrame)
        rows.append(Row("publish.swift_vs_aiortc", ratio, "ratio", target: .atMost(0.5),
                        note: ratioNote(plain, aiortc)))
        rows.append(Row("publish.swift_beauty0.5_vs_aiortc", zipRatio(withBeauty?.cpuMsPerFrame, aiortc?.cpuMsPerFrame), "ratio",
                        note: "Swift with the beauty filter vs aiortc without any processor"))
    }

    // 6. Capture → render latency.
    if options.runs("latency") {
        progress("latency: capture->render through two loopback PeerConnections, 720p30 H.264 (\(Int(options.pipelineSeconds)) s)")
        let note = "capture->render: the CLOCK_REALTIME ms the test pattern writes into a frame's pixels when it is drawn, against the clock when the decoded frame reaches a renderer on the receiving PeerConnection (capture, encode, packetize, SRTP, UDP 127.0.0.1, jitter buffer, decode); 1280x720@30 H.264 1.5 Mbps, every frame for \(Int(options.pipelineSeconds)) s after 1 s warm-up; ms resolution"
        do {
            let r = try await captureToRenderLatency(seconds: options.pipelineSeconds)
            rows.append(Row("latency.capture_to_render.p50", r.p50, "ms", note: note))
            rows.append(Row("latency.capture_to_render.p99", r.p99, "ms", note: note))
            extra["latency_capture_to_render"] = ["frames": r.frames, "unreadable": r.unreadable, "p50_ms": r.p50, "p99_ms": r.p99]
        } catch {
            rows.append(Row("latency.capture_to_render.p50", nil, "ms", note: "failed: \(error)"))
        }
    }

    // 7. Relay.
    if options.runs("relay") {
        await relayPhase(options, rows: &rows, extra: &extra)
        await relaySimulcastPhase(options, rows: &rows, extra: &extra)
    }
    return (rows, extra)
}

private func zipRatio(_ a: Double?, _ b: Double?) -> Double? {
    guard let a, let b, b > 0 else { return nil }
    return a / b
}

private func ratioNote(_ swift: PipelineResult?, _ aiortc: AiortcPublishResult?) -> String {
    var parts = ["Swift CPU per frame / aiortc CPU per frame, no processors, same source, codec, size, rate and bitrate"]
    if let s = swift {
        parts.append(String(format: "Swift sent %.1f fps at %.0f kbps", s.fps, s.kbps))
    }
    if let a = aiortc {
        parts.append(String(format: "aiortc %.1f fps at %.0f kbps", a.fps, a.kbps)
                     + (a.sourceMsPerFrame.map { String(format: " (of its CPU, %.2f ms/frame is drawing the pattern in numpy)", $0) } ?? ""))
    }
    return parts.joined(separator: "; ")
}

private func pipelineJSON(_ r: PipelineResult) -> [String: Any] {
    ["cpu_ms_per_frame": (r.cpuMsPerFrame * 1000).rounded() / 1000, "frames": r.frames, "fps": (r.fps * 10).rounded() / 10,
     "kbps_at_sink": r.kbps.rounded(), "idle_cores_subtracted": (r.idleCores * 1000).rounded() / 1000,
     "sink_cores_subtracted": (r.sinkCores * 1000).rounded() / 1000]
}

@MainActor
private func relayPhase(_ options: Options, rows: inout [Row], extra: inout [String: Any]) async {
    progress("relay: swiftrtc serve + publish (\(options.swiftrtc)); fan-out to \(options.fanout.map(String.init).joined(separator: ",")) players, \(Int(options.fanoutWindow)) s each")
    let relay: RelayBenchResult
    do {
        relay = try await relayBenchmark(swiftrtc: options.swiftrtc, series: options.fanout, window: options.fanoutWindow,
                                         budget: options.fanoutBudget, server: options.server)
    } catch {
        rows.append(Row("relay.fanout.max_players_under_1pct_loss", nil, "players", note: "failed: \(error)"))
        return
    }
    let connectNote = "`swiftrtc publish` / `swiftrtc play` (release build, child processes) against `swiftrtc serve` on 127.0.0.1 with the SRS JSON API, as their --stats-json reports: connectMs = start -> media flowing (after signaling, ICE, DTLS), firstFrameMs = play start -> first decoded frame; median of 3"
    rows.append(Row("relay.publish.connect_ms", median(relay.publishConnectMs), "ms", note: connectNote))
    rows.append(Row("relay.play.connect_ms", median(relay.playConnectMs), "ms", note: connectNote))
    rows.append(Row("relay.play.first_frame_ms", median(relay.playFirstFrameMs), "ms", note: connectNote))

    // The largest N before the first failing one (later steps are only the reported counts).
    let best = relay.steps.prefix(while: \.passed).last
    let measuredUpTo = relay.steps.last?.players ?? 0
    let seriesNote = "one `swiftrtc publish` (a busy 1280x720@30 Y4M clip, since the test pattern codes to ~0.6 Mbps; H.264 --bitrate 1500, no audio) -> `swiftrtc serve` -> N players in the bench process (PeerConnections that remove SRTP and count RTP, no decoding); per N: \(Int(options.fanoutWindow)) s window after 1.5 s settling; loss from the players' sequence-number gaps; relay CPU from /proc/PID/stat. Largest N with loss < 1% and the relay within one core"
        + (relay.steps.last?.passed == true ? " (every N tried passed, up to \(measuredUpTo): a lower bound)" : "")
        + (relay.notes.isEmpty ? "" : "; " + relay.notes.joined(separator: "; "))
    rows.append(Row("relay.fanout.max_players_under_1pct_loss", best.map { Double($0.players) }, "players", note: seriesNote))
    if let best {
        rows.append(Row("relay.fanout.loss_at_max", best.loss * 100, "%", note: seriesNote))
        rows.append(Row("relay.fanout.relay_cores_at_max", best.relayCores, "cores", note: seriesNote))
        rows.append(Row("relay.fanout.inbound_packets_per_s_at_max", best.inboundPPS, "packets/s",
                        note: "RTP packets/s the publisher delivered to the relay during that window (~160 for its 1.5 Mbps when it has a core to itself; lower means the publisher was starved of CPU by the players and the relay sharing the machine)"))
    }
    if let failed = relay.steps.last, !failed.passed {
        rows.append(Row("relay.fanout.loss_at_\(failed.players)_players", failed.loss * 100, "%", note: seriesNote))
        rows.append(Row("relay.fanout.relay_cores_at_\(failed.players)_players", failed.relayCores, "cores", note: seriesNote))
    }

    // The floor, at each N the relay was measured at, with the publisher's packet rate.
    progress("relay: forwarding floor (recv + sendmmsg to N sockets), 2 s at some of the N above")
    var floors: [Int: FloorResult] = [:]
    let floorAt: Set<Int> = relayReportedPlayerCounts.union([1, 10, 80, best?.players ?? 0, relay.steps.last?.players ?? 0])
    for step in relay.steps where floorAt.contains(step.players) {
        let pps = step.inboundPPS > 0 ? step.inboundPPS : 150
        if let f = forwardFloor(destinations: step.players, packetsPerSecond: pps, seconds: 2) { floors[step.players] = f }
    }
    extra["relay_fanout"] = relay.steps.map { step -> [String: Any] in
        var j = step.json
        if let f = floors[step.players] {
            j["floor_cpu_us_per_forwarded_packet"] = (f.cpuPerPacketUs * 1000).rounded() / 1000
            j["floor_forwarded"] = f.forwarded
            if let r = step.relayCPUPerPacketUs, f.cpuPerPacketUs > 0 { j["relay_vs_floor"] = (r / f.cpuPerPacketUs * 100).rounded() / 100 }
        }
        return j
    }
    extra["relay_connect_ms"] = ["publish": relay.publishConnectMs, "play": relay.playConnectMs, "play_first_frame": relay.playFirstFrameMs]
    if let kbps = relay.publisherKbps { extra["relay_publisher_kbps"] = kbps }

    let at = best ?? relay.steps.last
    let floorNote = "a thread that receives one UDP stream (1200-byte datagrams at the publisher's measured packet rate, in 30 bursts a second) and re-sends each datagram's bytes to N sockets with one sendmmsg: its thread CPU / datagrams sent; no SRTP, no RTP parsing, no per-player state"
    let serverName = options.server.map { "the server at \($0.url) (pid \($0.pid))" } ?? "the relay"
    for step in relay.steps where relayReportedPlayerCounts.contains(step.players) {
        let n = step.players
        let relayPer = step.relayCPUPerPacketUs
        let floorPer = floors[n]?.cpuPerPacketUs
        rows.append(Row("relay.cpu_per_forwarded_packet.\(n)_players", relayPer, "us/packet",
                        note: "\(serverName): its whole CPU (unprotect in, per-player rewrite + SRTP protect + send out, RTCP, timers) / packets sent to players; \(n) players, loss \(String(format: "%.2f", step.loss * 100))%"))
        rows.append(Row("relay.user_cpu_per_forwarded_packet.\(n)_players", step.relayUserCPUPerPacketUs, "us/packet",
                        note: "of that, user time: \(serverName)'s own code (the rest is the kernel's receive, sendmmsg and loopback delivery); the part code changes move, and steadier than the whole on a shared machine"))
        rows.append(Row("relay.floor.cpu_per_forwarded_packet.\(n)_players", floorPer, "us/packet", note: floorNote))
        rows.append(Row("relay.vs_floor.\(n)_players", zipRatio(relayPer, floorPer), "ratio", target: n == 480 ? .atMost(1.5) : nil,
                        note: "CPU per forwarded packet / the floor's at the same N and packet rate, measured in this run"))
    }
    if let at, !relayReportedPlayerCounts.contains(at.players) {
        let relayPer = at.relayCPUPerPacketUs
        let floorPer = floors[at.players]?.cpuPerPacketUs
        rows.append(Row("relay.cpu_per_forwarded_packet.\(at.players)_players", relayPer, "us/packet",
                        note: "the relay's whole CPU (unprotect in, per-player rewrite + SRTP protect + send out, RTCP, timers) / packets it sent to players, at the N of the row above"))
        rows.append(Row("relay.floor.cpu_per_forwarded_packet.\(at.players)_players", floorPer, "us/packet", note: floorNote))
        rows.append(Row("relay.vs_floor.\(at.players)_players", zipRatio(relayPer, floorPer), "ratio",
                        note: "relay CPU per forwarded packet / floor CPU per forwarded packet at the same N and packet rate"))
    }
}
/// The fan-out again with a simulcast publisher (issue 22's row): three layers in, one to each
/// player, at the reported player counts up to the largest of `--fanout`; the floor at the same N
/// and at the packet rate each player was sent.
@MainActor
private func relaySimulcastPhase(_ options: Options, rows: inout [Row], extra: inout [String: Any]) async {
    let series = relayReportedPlayerCounts.sorted().filter { $0 <= (options.fanout.max() ?? 0) }
    guard !series.isEmpty, options.server == nil else { return }
    progress("relay simulcast: swiftrtc publish --simulcast; fan-out to \(series.map(String.init).joined(separator: ",")) players")
    let relay: RelayBenchResult
    do {
        relay = try await relayBenchmark(swiftrtc: options.swiftrtc, series: series, window: options.fanoutWindow,
                                         budget: options.fanoutBudget, runs: 0, simulcast: true)
    } catch {
        rows.append(Row("relay.simulcast.vs_floor.480_players", nil, "ratio", note: "failed: \(error)"))
        return
    }
    var steps: [[String: Any]] = []
    for step in relay.steps {
        let floor = forwardFloor(destinations: step.players, packetsPerSecond: step.forwardedPPSPerPlayer > 0 ? step.forwardedPPSPerPlayer : 150,
                                 seconds: 2)
        var j = step.json
        j["floor_cpu_us_per_forwarded_packet"] = floor.map { ($0.cpuPerPacketUs * 1000).rounded() / 1000 } ?? NSNull()
        steps.append(j)
        let n = step.players
        let note = "`swiftrtc publish --simulcast` (the busy 720p clip; layers 1, 1/2, 1/4, the largest capped at 1.5 Mbps) -> the relay -> \(n) players, each sent the largest layer; loss \(String(format: "%.2f", step.loss * 100))%, \(Int(step.inboundPPS)) packets/s in, \(Int(step.forwardedPPSPerPlayer)) out per player" + (relay.notes.isEmpty ? "" : "; " + relay.notes.joined(separator: "; "))
        rows.append(Row("relay.simulcast.cpu_per_forwarded_packet.\(n)_players", step.relayCPUPerPacketUs, "us/packet", note: note))
        rows.append(Row("relay.simulcast.vs_floor.\(n)_players", zipRatio(step.relayCPUPerPacketUs, floor?.cpuPerPacketUs), "ratio",
                        target: n == 480 ? .atMost(1.6) : nil,
                        note: "relay CPU per forwarded packet (all three layers received and unprotected, one forwarded per player) / the recv + sendmmsg floor's at the same N and per-player packet rate, measured in this run"))
    }
    extra["relay_simulcast_fanout"] = steps
}

