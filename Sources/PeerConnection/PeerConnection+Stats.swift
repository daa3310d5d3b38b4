import ICE

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
        t["dtlsState"] = .string(transport.map { "\($0.dtlsState)" } ?? "new")
        t["iceState"] = .string(iceConnectionState.rawValue)
        t["dtlsRole"] = .string(transport?.dtlsRole.map { $0 == .client ? "client" : "server" } ?? "unknown")
        if let profile = transport?.srtpProfileName { t["srtpCipher"] = .string(profile) }
        if let c = transport?.counters {
            t["packetsSent"] = .int(c.rtpSent + c.rtcpSent)
            t["packetsReceived"] = .int(c.rtpReceived + c.rtcpReceived)
        }
        guard let ice = transport?.ice else {
            report.add(t)
            return
        }
        for (index, pair) in ice.stats.pairs.enumerated() {
            var p = RTCStats(id: "CP\(index)", type: "candidate-pair")
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
            if pair.selected { t["selectedCandidatePairId"] = .string(p.id) }
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
