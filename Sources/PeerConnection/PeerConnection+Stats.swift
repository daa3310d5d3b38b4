import ICE
import STUN

extension PeerConnection {
    /// W3C `getStats()`: transport, candidate pair, codecs and per-m-line RTP statistics.
    public func getStats() async -> StatsReport {
        (try? await loop.submit { [self] in collectStats() }) ?? StatsReport()
    }
}

extension PeerConnection {
    /// Loop thread only.
    func transportStats(into report: inout StatsReport, transport: MediaTransport?) {
        var t = RTCStats(id: "T01", type: "transport")
        t["dtlsState"] = .string((transport.map { DtlsTransportState($0.dtlsState) } ?? .new).rawValue)
        t["iceState"] = .string(iceConnectionState.rawValue)
        t["dtlsRole"] = .string(transport?.dtlsRole.map { $0 == .client ? "client" : "server" } ?? "unknown")
        if let profile = transport?.srtpProfileName { t["srtpCipher"] = .string(profile) }
        if let c = transport?.counters {
            t["packetsSent"] = .int(c.rtpSent + c.rtcpSent)
            t["packetsReceived"] = .int(c.rtpReceived + c.rtcpReceived)
        }
        // Not W3C: RTX packets unwrapped (RFC 4588) and dropped (padding, unknown stream).
        t["rtxPacketsReceived"] = .int(rtxReceived)
        t["rtxPacketsDropped"] = .int(rtxDropped)
        if let c = transport?.congestion.stats {
            t["transportFeedbackSent"] = .int(c.feedbackSent)
            t["rembSent"] = .int(c.rembSent)
        }
        // Not W3C: why the send estimate is what it is.
        if let e = transport?.congestion.estimatorStats {
            if let b = e.delayBasedBitrate { t["delayBasedBitrate"] = .int(b) }
            if let b = e.acknowledgedBitrate { t["acknowledgedBitrate"] = .int(b) }
            if let b = e.rembBitrate { t["rembReceivedBitrate"] = .int(b) }
            t["delayState"] = .string("\(e.delayState)")
            t["probeClustersRequested"] = .int(e.probeClustersRequested)
            if let b = e.lastProbeResult { t["lastProbeResult"] = .int(b) }
        }
        guard let ice = transport?.ice else {
            report.add(t)
            return
        }
        var candidateIDs: [SocketAddress: String] = [:]
        for (index, pair) in ice.stats.pairs.enumerated() {
            var p = RTCStats(id: "CP\(index)", type: "candidate-pair")
            // W3C local-candidate: `candidateType` says whether the pair sends through TURN.
            if candidateIDs[pair.local] == nil {
                let id = "LC\(candidateIDs.count)"
                candidateIDs[pair.local] = id
                var c = RTCStats(id: id, type: "local-candidate")
                c["address"] = .string(pair.local.host)
                c["port"] = .int(Int(pair.local.port))
                c["protocol"] = .string("udp")
                let type = ice.localCandidateType(pair.local) ?? .prflx
                c["candidateType"] = .string(type.rawValue)
                if type == .relay {
                    // W3C: how we reach the TURN server (udp, tcp, tls), and its URL.
                    let relay = transport?.relays.first { $0.relayed == pair.local }
                    c["relayProtocol"] = .string(relay?.relayProtocol ?? "udp")
                    if let relay { c["url"] = .string(relay.url.description) }
                }
                report.add(c)
            }
            p["localCandidateId"] = .string(candidateIDs[pair.local] ?? "")
            p["localAddress"] = .string(pair.local.description)
            p["remoteAddress"] = .string(pair.remote.description)
            p["state"] = .string(pair.state.rawValue)
            p["nominated"] = .bool(pair.nominated)
            p["priority"] = .int(Int(truncatingIfNeeded: pair.priority))
            p["requestsSent"] = .int(pair.requestsSent)
            p["responsesReceived"] = .int(pair.responsesReceived)
            p["requestsReceived"] = .int(pair.requestsReceived)
            p["responsesSent"] = .int(pair.responsesSent)
            if let rtt = pair.currentRTT { p["currentRoundTripTime"] = .double(rtt.seconds) }
            if pair.selected {
                t["selectedCandidatePairId"] = .string(p.id)
                if let estimate = transport?.congestion.availableOutgoingBitrate { p["availableOutgoingBitrate"] = .int(estimate) }
            }
            report.add(p)
        }
        report.add(t)
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension PeerConnection {
    /// Loop thread only: everything getStats reports.
    func collectStats() -> StatsReport {
        var report = StatsReport()
        transportStats(into: &report, transport: transport)
        dataChannelStats(into: &report)
        for t in transceiverList {
            guard let mid = t.mid else { continue }
            for codec in t.negotiatedCodecs {
                var c = RTCStats(id: "CO\(mid)_\(codec.payloadType)", type: "codec")
                c["payloadType"] = .int(Int(codec.payloadType))
                c["mimeType"] = .string(codec.mimeType)
                c["clockRate"] = .int(codec.clockRate)
                if let ch = codec.channels { c["channels"] = .int(ch) }
                if let f = codec.sdpFmtpLine { c["sdpFmtpLine"] = .string(f) }
                c["transportId"] = .string("T01")
                report.add(c)
            }
            let tx = t.sender.stats
            if t.currentDirection?.sends == true {
                var o = RTCStats(id: "OT\(mid)", type: "outbound-rtp")
                o["ssrc"] = .int(Int(t.sender.ssrc))
                o["kind"] = .string(t.kind.rawValue)
                o["mid"] = .string(mid)
                o["packetsSent"] = .int(tx.packets)
                o["bytesSent"] = .int(tx.bytes)
                o["transportId"] = .string("T01")
                if let first = t.negotiatedCodecs.first { o["codecId"] = .string("CO\(mid)_\(first.payloadType)") }
                report.add(o)
            }
            let rx = t.receiver.stats
            if t.currentDirection?.receives == true, let ssrc = t.receiver.remoteSSRCs.first {
                var i = RTCStats(id: "IT\(mid)", type: "inbound-rtp")
                i["ssrc"] = .int(Int(ssrc))
                i["kind"] = .string(t.kind.rawValue)
                i["mid"] = .string(mid)
                i["packetsReceived"] = .int(rx.packets)
                i["bytesReceived"] = .int(rx.bytes)
                i["transportId"] = .string("T01")
                report.add(i)
            }
            mediaStats(for: t, mid: mid, into: &report)
        }
        return report
    }
}

extension PeerConnection {
    /// `candidateType` of the selected pair's local candidate ("host", "srflx", "prflx",
    /// "relay"), or nil before a pair is selected.
    public func selectedLocalCandidateType() async -> String? {
        guard case .string(let type)? = await selectedLocalCandidate()?["candidateType"] else { return nil }
        return type
    }

    /// The `local-candidate` stats of the selected pair (for a relay: `relayProtocol`, `url`),
    /// or nil before a pair is selected.
    public func selectedLocalCandidate() async -> RTCStats? {
        let report = await getStats()
        guard let transport = report.ofType("transport").first,
              case .string(let pairID)? = transport["selectedCandidatePairId"],
              case .string(let localID)? = report.stats[pairID]?["localCandidateId"] else { return nil }
        return report.stats[localID]
    }
}
