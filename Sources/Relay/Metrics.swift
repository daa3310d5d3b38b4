import Foundation

/// `GET /metrics`: the relay in Prometheus's text format (version 0.0.4). Totals survive the
/// streams they came from (`RelayState.retired`); per-stream series carry an `app`/`stream` label.
struct RelayCounters: Sendable {
    var packetsIn = 0, bytesIn = 0, packetsOut = 0, bytesOut = 0
    var nacksReceived = 0, retransmissionsSent = 0, packetsDropped = 0
    /// NACKed packets not resent: the same player was sent them (or had them resent) less than its RTT ago.
    var retransmissionsSuppressed = 0
    /// NACKed packets not resent: the player's estimate left no room for them.
    var retransmissionsOverBudget = 0
    /// Packets sent to players as padding (probing for a larger simulcast layer).
    var paddingSent = 0
    /// Publisher packets that were here already (a probe's RTX padding, a duplicate on the way).
    var duplicatesDropped = 0
    /// Joining players sent the keyframe that had just gone by from the history.
    var keyframesReplayed = 0

    static func + (a: Self, b: Self) -> Self {
        Self(packetsIn: a.packetsIn + b.packetsIn, bytesIn: a.bytesIn + b.bytesIn, packetsOut: a.packetsOut + b.packetsOut,
             bytesOut: a.bytesOut + b.bytesOut, nacksReceived: a.nacksReceived + b.nacksReceived,
             retransmissionsSent: a.retransmissionsSent + b.retransmissionsSent, packetsDropped: a.packetsDropped + b.packetsDropped,
             retransmissionsSuppressed: a.retransmissionsSuppressed + b.retransmissionsSuppressed,
             retransmissionsOverBudget: a.retransmissionsOverBudget + b.retransmissionsOverBudget,
             paddingSent: a.paddingSent + b.paddingSent, duplicatesDropped: a.duplicatesDropped + b.duplicatesDropped,
             keyframesReplayed: a.keyframesReplayed + b.keyframesReplayed)
    }
}

enum RelayMetrics {
    /// Loop thread (reads the relay's state).
    static func render(_ state: RelayState) -> String {
        let streams = state.streams.values.sorted { $0.id < $1.id }
        let total = streams.reduce(state.retired) { $0 + $1.counters }
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: Double)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for s in samples { out += "\(name)\(s.labels) \(format(s.value))\n" }
        }
        func labels(_ s: RelayStream) -> String { "{app=\"\(s.app)\",stream=\"\(s.name)\"}" }
        metric("swiftrtc_streams", "gauge", "Streams with a publisher or players.", [("", Double(streams.count))])
        metric("swiftrtc_publishers", "gauge", "Connected publishers.",
               [("", Double(streams.filter { $0.publisher?.connected == true }.count))])
        metric("swiftrtc_players", "gauge", "Connected players per stream.",
               streams.map { (labels($0), Double($0.players.values.filter(\.connected).count)) })
        metric("swiftrtc_sessions", "gauge", "Sessions, connected or not.", [("", Double(state.sessions.count))])
        metric("swiftrtc_rtp_packets_received_total", "counter", "RTP packets from publishers.", [("", Double(total.packetsIn))])
        metric("swiftrtc_rtp_bytes_received_total", "counter", "RTP bytes from publishers.", [("", Double(total.bytesIn))])
        metric("swiftrtc_rtp_packets_sent_total", "counter", "RTP packets forwarded to players.", [("", Double(total.packetsOut))])
        metric("swiftrtc_rtp_bytes_sent_total", "counter", "RTP bytes forwarded to players.", [("", Double(total.bytesOut))])
        metric("swiftrtc_nacks_received_total", "counter", "Sequence numbers players NACKed.", [("", Double(total.nacksReceived))])
        metric("swiftrtc_retransmissions_sent_total", "counter", "Packets resent from the history.",
               [("", Double(total.retransmissionsSent))])
        metric("swiftrtc_retransmissions_suppressed_total", "counter", "NACKed packets not resent: sent or resent to that player less than its RTT ago.",
               [("", Double(total.retransmissionsSuppressed))])
        metric("swiftrtc_retransmissions_over_budget_total", "counter",
               "NACKed packets not resent: the player's bandwidth estimate left no room for them.",
               [("", Double(total.retransmissionsOverBudget))])
        metric("swiftrtc_padding_packets_sent_total", "counter", "Packets sent to players as padding (probing for a larger simulcast layer).",
               [("", Double(total.paddingSent))])
        metric("swiftrtc_duplicate_packets_dropped_total", "counter",
               "Publisher packets already received (a probe's RTX padding, a duplicate on the way), not forwarded again.",
               [("", Double(total.duplicatesDropped))])
        metric("swiftrtc_keyframes_replayed_total", "counter",
               "Players that joined just after a keyframe went by and were sent it and the packets since from the history.",
               [("", Double(total.keyframesReplayed))])
        metric("swiftrtc_packets_dropped_total", "counter", "Packets not forwarded (a player's stream could not continue them).",
               [("", Double(total.packetsDropped))])
        metric("swiftrtc_stream_receive_kbps", "gauge", "Publisher bitrate per stream over ~2 s.",
               streams.map { (labels($0), Double($0.bitrate.kbps(now: $0.loop.now))) })
        let simulcast = streams.filter { !$0.layers.isEmpty }
        if !simulcast.isEmpty {
            func layerLabels(_ s: RelayStream, _ rid: String) -> String { "{app=\"\(s.app)\",stream=\"\(s.name)\",rid=\"\(rid)\"}" }
            metric("swiftrtc_layer_receive_kbps", "gauge", "Publisher bitrate per simulcast layer over ~2 s.",
                   simulcast.flatMap { s in s.layers.map { (layerLabels(s, $0.rid), Double($0.kbps)) } })
            metric("swiftrtc_layer_players", "gauge", "Connected players sent each simulcast layer.",
                   simulcast.flatMap { s in
                       s.layers.map { layer in
                           (layerLabels(s, layer.rid), Double(s.players.values.filter { $0.connected && s.layerRID(of: $0) == layer.rid }.count))
                       }
                   })
            metric("swiftrtc_layer_keyframe_requests_total", "counter",
                   "Keyframe requests (PLIs) sent to the publisher per simulcast layer (its current publisher).",
                   simulcast.flatMap { s in s.layers.map { (layerLabels(s, $0.rid), Double($0.keyframeRequests)) } })
        }
        let recorded = streams.filter { $0.recording != nil }
        if !recorded.isEmpty {
            metric("swiftrtc_stream_recording", "gauge", "1 while the stream is being recorded to a file (--record).",
                   recorded.map { (labels($0), $0.recording?.active == true ? 1 : 0) })
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        metric("process_cpu_seconds_total", "counter", "User and system CPU time.", [("", cpu)])
        metric("process_resident_memory_bytes", "gauge", "Resident set size.", [("", Double(residentBytes()))])
        return out
    }

    private static func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }

    /// VmRSS from /proc/self/status (0 where there is none).
    private static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kb * 1024
    }
}
