import Foundation
import SwiftRTC

/// `swiftrtc probe`: Swift as the offerer. Offers audio + video to a WHIP-style URL, connects,
/// sends raw RTP on every m-line and reports what came back, as JSON. A transport check that
/// needs no codecs; with `--datachannel N` also a data channel the peer is to echo.
enum ProbeCommand {
    static let usage = """
    usage: swiftrtc probe URL [--duration SEC] [--json PATH] [--rate PPS] [--datachannel N] [--restart-ice-at SEC]
                         [--add-video-at SEC] [--ice-server URL …]

    Offers one audio (Opus) and one video (VP8, H.264) m-line, sendrecv, to URL (POST,
    Content-Type: application/sdp, expects 201 + answer), connects with ICE and DTLS-SRTP,
    sends synthetic RTP on each m-line for SEC seconds and counts the RTP received.
    Exit code 0 only if the connection was established and RTP arrived on every m-line
    the answer lets the peer send on.

      --duration SEC   how long to send after connecting (default 3)
      --json PATH      write the result as JSON
      --rate PPS       packets per second per m-line (default 50)
      --datachannel N  also open a data channel (ordered, reliable), send N messages of
                       0 B up to the peer's max-message-size (at most 256 KiB) and require
                       every one back intact and in order (the peer echoes them)
      --restart-ice-at SEC  SEC after connecting, restart ICE: a re-offer with new
                       credentials POSTed to URL again; media keeps flowing meanwhile
      --add-video-at SEC  SEC after connecting, add a sendonly VP8 m-line (renegotiation,
                       the re-offer POSTed to URL again) and send RTP on it too
    \(IceOptions.usage)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc probe", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let duration = try a.number("duration", default: 3.0, in: 0.001...maxSeconds)
        let jsonPath = try a.option("json")
        let rate = try a.number("rate", default: 50, in: 1...1000)
        let echoCount = try a.number("datachannel", default: 0, in: 0...100_000)
        let ice = try IceOptions.parse(&a, command: "swiftrtc probe")
        let restartAt = try a.number("restart-ice-at", in: 0.0...maxSeconds)
        let addVideoAt = try a.number("add-video-at", in: 0.0...maxSeconds)
        let url = try a.positional("URL")
        try a.finish()
        guard url.hasPrefix("http://") else { throw UsageError("swiftrtc probe: URL must start with http://") }

        let started = ContinuousClock.now
        var configuration = PeerConnection.Configuration()
        ice.apply(to: &configuration)
        let pc = try PeerConnection(configuration: configuration)
        _ = try await pc.addTransceiver(.audio)
        _ = try await pc.addTransceiver(.video, codecs: [.vp8, .h264])
        let channel = echoCount > 0 ? try await pc.createDataChannel("probe") : nil
        let offer = try await pc.createOffer()
        try await pc.setLocalDescription(offer)
        await pc.waitForGatheringComplete(timeout: .seconds(3))
        let whip = WHIPClient(endpoint: url)
        let session = try await whip.publish(offer: (pc.localDescription ?? offer).sdp)
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: session.answer))
        var connectMs: Double?
        var result: [String: Any] = [:]
        do {
            try await pc.waitConnected(timeout: .seconds(15))
            connectMs = msSince(started)
            say("probe: connected in \(Int(connectMs ?? 0)) ms via \(pc.selectedCandidatePair.map { "\($0.local) <-> \($0.remote)" } ?? "?")")
            let echoes = channel.map { c in Task { try await DataChannelProbe.run(c, count: echoCount) } }
            let type = await pc.selectedLocalCandidateType() ?? "?"
            say("probe: connected in \(Int(connectMs ?? 0)) ms via \(type) \(pc.selectedCandidatePair.map { "\($0.local) <-> \($0.remote)" } ?? "?")")
            let restart = restartAt.map { at in Task { try await restartICE(pc, after: at, url: url) } }
            let added = addVideoAt.map { at in
                Task {
                    try await Task.sleep(for: .seconds(at))
                    let t = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.vp8])
                    let ms = try await reoffer(pc, url: url)
                    say("probe: video m-line \(t.mid ?? "?") added, renegotiated in \(Int(ms)) ms")
                    return ["mid": t.mid ?? "", "direction": t.currentDirection?.rawValue ?? "none", "renegotiatedMs": ms] as [String: any Sendable]
                }
            }
            try await sendRTP(pc, seconds: duration, rate: rate)
            if let report = try await added?.value { result["addedVideo"] = report }
            if let report = try await restart?.value {
                result["iceRestart"] = report.json
                say("probe: ICE restart answered in \(Int(report.answeredMs)) ms, new pair selected: \(report.selectedMs.map { "\(Int($0)) ms" } ?? "no")")
            }
            if let report = try await echoes?.value {
                result["dataChannel"] = report.json
                say("probe: data channel id \(report.id) echoed \(report.echoed)/\(report.sent), intact and in order: \(report.ok)")
            }
        } catch {
            printError("swiftrtc probe: \(error)")
        }
        let transceivers = pc.transceivers
        var ok = pc.connectionState == .connected
        if channel != nil && (result["dataChannel"] as? [String: Any])?["ok"] as? Bool != true { ok = false }
        if restartAt != nil && (result["iceRestart"] as? [String: Any])?["ok"] as? Bool != true { ok = false }
        var rows: [[String: Any]] = []
        for t in transceivers {
            let rx = t.receiver.stats, tx = t.sender.stats
            let receives = t.currentDirection?.receives ?? false
            if receives && rx.packets == 0 { ok = false }
            rows.append([
                "mid": t.mid ?? "", "kind": t.kind.rawValue,
                "direction": t.currentDirection?.rawValue ?? "none",
                "sentPackets": tx.packets, "receivedPackets": rx.packets,
                "receivedPayloadTypes": rx.payloadTypes.sorted().map(Int.init),
                "negotiatedPayloadTypes": t.negotiatedCodecs.map { Int($0.payloadType) },
                "negotiatedCodecs": t.negotiatedCodecs.map(\.mimeType),
            ])
            say("probe: mid \(t.mid ?? "?") \(t.kind.rawValue) sent \(tx.packets) received \(rx.packets) PTs \(rx.payloadTypes.sorted())")
        }
        result["connected"] = pc.connectionState == .connected
        result["iceState"] = pc.iceConnectionState.rawValue
        result["connectionState"] = pc.connectionState.rawValue
        result["dtlsState"] = pc.dtlsState.rawValue
        result["connectMs"] = connectMs ?? NSNull()
        result["transceivers"] = rows
        result["transport"] = await pc.transportStatistics()
        let local = await pc.selectedLocalCandidate()
        func text(_ key: String) -> Any { if case .string(let value)? = local?[key] { value } else { NSNull() } }
        result["selectedLocalCandidateType"] = text("candidateType")
        // For a relay candidate: how we reach the TURN server (udp, tcp, tls) and its URL.
        result["selectedLocalRelayProtocol"] = text("relayProtocol")
        result["selectedLocalCandidateUrl"] = text("url")
        if let jsonPath {
            let data = try JSONSerialization.data(withJSONObject: result, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: jsonPath))
        }
        try? await whip.stop(session)
        await pc.close()
        return ok ? 0 : 1
    }

    /// Synthetic RTP on each sending m-line: the first negotiated payload type, a counter in the payload.
    static func sendRTP(_ pc: PeerConnection, seconds: Double, rate: Int) async throws {
        let interval = Duration.seconds(1.0 / Double(rate))
        let end = ContinuousClock.now.advanced(by: .seconds(seconds))
        var tick: UInt32 = 0
        var next = ContinuousClock.now
        while ContinuousClock.now < end {
            // Read each tick: a renegotiation may add m-lines or change directions.
            for t in pc.transceivers where t.currentDirection?.sends == true {
                guard let codec = t.negotiatedCodecs.first else { continue }
                let size = t.kind == .audio ? 120 : 900
                var payload = [UInt8](repeating: 0, count: size)
                withUnsafeBytes(of: tick.bigEndian) { for i in 0..<4 { payload[i] = $0[i] } }
                let step = UInt32(codec.clockRate / rate)
                t.sender.send(payloadType: codec.payloadType, payload: payload, timestamp: tick &* step, marker: true)
            }
            tick &+= 1
            next = next.advanced(by: interval)
            try await Task.sleep(until: next, clock: .continuous)
        }
        try await Task.sleep(for: .milliseconds(300))   // let the last echoes arrive
    }

    /// `--restart-ice-at`: restartIce(), the re-offer POSTed like the first, the answer applied;
    /// reports how long until a pair checked with the new credentials was selected.
    struct RestartReport: Sendable {
        var answeredMs: Double
        var selectedMs: Double?
        var pairBefore: String?, pairAfter: String?
        var json: [String: Any] {
            ["answeredMs": answeredMs, "selectedMs": selectedMs ?? NSNull(), "ok": selectedMs != nil,
             "pairBefore": pairBefore ?? NSNull(), "pairAfter": pairAfter ?? NSNull()]
        }
    }

    static func restartICE(_ pc: PeerConnection, after seconds: Double, url: String) async throws -> RestartReport {
        try await Task.sleep(for: .seconds(seconds))
        let before = pc.selectedCandidatePair
        let started = ContinuousClock.now
        pc.restartIce()
        let answeredMs = try await reoffer(pc, url: url)
        // The new checks end in a selected pair; the stats show it once there is one again.
        var selectedMs: Double?
        let end = ContinuousClock.now.advanced(by: .seconds(5))
        while selectedMs == nil, ContinuousClock.now < end {
            if await pc.getStats().ofType("transport").first?["selectedCandidatePairId"] != nil { selectedMs = msSince(started) }
            try await Task.sleep(for: .milliseconds(5))
        }
        return RestartReport(answeredMs: answeredMs, selectedMs: selectedMs,
                             pairBefore: before.map { "\($0.local) <-> \($0.remote)" },
                             pairAfter: pc.selectedCandidatePair.map { "\($0.local) <-> \($0.remote)" })
    }

    /// A subsequent offer (setLocalDescription()), POSTed like the first; returns the ms it took.
    static func reoffer(_ pc: PeerConnection, url: String) async throws -> Double {
        let started = ContinuousClock.now
        try await pc.setLocalDescription()
        guard let offer = pc.localDescription else { throw PeerConnectionError(.invalidState, "no local description for the re-offer") }
        let session = try await WHIPClient(endpoint: url).publish(offer: offer.sdp)
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: session.answer))
        return msSince(started)
    }

    static func msSince(_ start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
}

