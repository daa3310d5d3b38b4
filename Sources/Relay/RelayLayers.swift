import RTPMedia

/// Which of a simulcast publisher's layers a player gets: `?layer=low|mid|high` on its play or
/// WHEP URL (SRS's simulcast branch names them so); high unless it asks.
public enum LayerPreference: String, Sendable, CaseIterable {
    case low, mid, high

    /// From a session's query string (`a=1&layer=low`); nil when it names none or another value.
    init?(query: String) {
        guard let value = queryValue("layer", in: query) else { return nil }
        self.init(rawValue: String(value))
    }
}

/// The highest temporal layer a player takes: `?temporal=0|1|2` on its play or WHEP URL (0: the
/// base layer alone, a quarter of an L1T3 stream's frames); nil when it names none.
func temporalCap(query: String) -> UInt8? {
    queryValue("temporal", in: query).flatMap { UInt8($0) }.flatMap { $0 <= 3 ? $0 : nil }
}

/// The first value of `name` in a query string (`a=1&layer=low`).
private func queryValue(_ name: String, in query: String) -> Substring? {
    for pair in query.split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1)
        if parts.count == 2, parts[0] == name { return parts[1] }
    }
    return nil
}

/// One RTP stream of the publisher's video as the relay keeps it: with simulcast one per layer,
/// else the one. Sequence numbers are the stream's own, so each has its history.
struct VideoLayer {
    let ssrc: UInt32
    /// Its rid (simulcast), once its packets named it.
    var rid: String?
    /// Its recent packets (about a second of 720p), to answer players' NACKs.
    var history = RTPHistory<[UInt8]>(capacity: 1024)
    /// The first sequence number of its newest keyframe: NACKs for packets before it are not
    /// answered (`NackResponder.supersededBefore`).
    var keyframeStart: UInt16?
    /// Its newest keyframe's RTP timestamp and when that keyframe started here: the packets of
    /// it move the layer's keyframe-request window on (`RelayStream.noteVideo`).
    var keyframeTimestamp: UInt32?
    var keyframeAt: ContinuousClock.Instant?
    /// Its highest sequence number so far (a packet behind it is a repair: it starts nothing).
    var newestSequence: UInt16?
    /// From its newest keyframe.
    var size: (width: Int, height: Int)?
    /// When its last packet came, and whether it has been silent `VideoLayers.stoppedAfter`
    /// (a layer the publisher turned off is not chosen until it sends again).
    var lastPacketAt: ContinuousClock.Instant?
    /// What the publisher sends on it (the allocator's layer rates).
    var meter = BitrateMeter()
    /// Temporal layers: what it sends on each (TID 0…3), from VP8's payload descriptors or
    /// H.264's nal_ref_idc (`H264TemporalReader`: referenced or not).
    var temporalMeters: [BitrateMeter] = []

    /// It has sent more than one temporal layer (an H.264 stream's base alone is not one).
    var hasTemporalLayers: Bool { temporalMeters.count > 1 }

    /// With temporal layers: the bits per second of its layers up to TID 0, 1, … — every
    /// choice short of the whole (empty: none seen in the last seconds).
    func temporalRates(now: ContinuousClock.Instant) -> [Int] {
        let rates = temporalMeters.map { $0.recentKbps(now: now) * 1000 }
        guard let top = rates.lastIndex(where: { $0 > 0 }), top > 0 else { return [] }
        var sum = 0
        return rates[..<top].map { sum += $0; return sum }
    }
    var retired = false {
        didSet { if retired { size = nil } }
    }
}

/// The publisher's video streams, and which one a player that prefers a layer is to get.
struct VideoLayers {
    /// More SSRCs than this (a peer inventing them) are forwarded unkept: no history.
    static let limit = 8
    /// A layer silent this long is taken as stopped.
    static let stoppedAfter: Duration = .seconds(1)
    private(set) var bySSRC: [UInt32: VideoLayer] = [:]
    /// The rids the publisher's simulcast has, in its `a=simulcast` order; fewer than two: none.
    var rids: [String] = []

    var isSimulcast: Bool { rids.count > 1 }
    /// When the first video packet came (nil: none yet).
    var firstPacketAt: ContinuousClock.Instant?

    /// Whether a player can be given its first layer: every rid has shown its stream, or the
    /// publisher has sent for `stoppedAfter` (the missing ones are not coming). Before that, a
    /// player asking for the low layer would get the first layer to arrive, whatever it is.
    func isComplete(now: ContinuousClock.Instant) -> Bool {
        let seen = Set(bySSRC.values.compactMap(\.rid))
        return rids.allSatisfy(seen.contains) || firstPacketAt.map { now - $0 >= Self.stoppedAfter } ?? false
    }

    /// The layer of `ssrc`, made on its first packet (while under the limit).
    mutating func touch(_ ssrc: UInt32, rid: @autoclosure () -> String?) -> Bool {
        if bySSRC[ssrc] != nil {
            if isSimulcast, bySSRC[ssrc]?.rid == nil { bySSRC[ssrc]?.rid = rid() }
            return true
        }
        guard bySSRC.count < Self.limit else { return false }
        bySSRC[ssrc] = VideoLayer(ssrc: ssrc, rid: rid())
        return true
    }

    /// Mutated in place (`_modify`): with a plain setter, every `self[ssrc]?.history.store(…)`
    /// copied the layer out, so its history's 1,024 entries were copied (and retained) per packet.
    subscript(ssrc: UInt32) -> VideoLayer? {
        get { bySSRC[ssrc] }
        _modify { yield &bySSRC[ssrc] }
    }

    /// The simulcast layers from smallest to largest: by their keyframes' width once every
    /// layer has shown one, else in the order of the publisher's rids (the order of its
    /// `sendEncodings`). Streams with no negotiated rid are not layers.
    var ranked: [VideoLayer] {
        let layers = bySSRC.values.filter { !$0.retired && ($0.rid.map(rids.contains) ?? false) }
        let order = { (l: VideoLayer) in l.rid.flatMap { rids.firstIndex(of: $0) } ?? rids.count }
        if layers.allSatisfy({ $0.size != nil }) {
            return layers.sorted { ($0.size!.width * $0.size!.height, order($0)) < ($1.size!.width * $1.size!.height, order($1)) }
        }
        return layers.sorted { order($0) < order($1) }
    }

    /// The SSRC a player preferring `preference` is to get: the largest, the smallest, or the
    /// one in the middle (the smaller of two); nil while no layer is known.
    func choice(_ preference: LayerPreference, in ranked: [VideoLayer]) -> UInt32? {
        guard !ranked.isEmpty else { return nil }
        switch preference {
        case .low: return ranked.first?.ssrc
        case .high: return ranked.last?.ssrc
        case .mid: return ranked[(ranked.count - 1) / 2].ssrc
        }
    }

    /// Marks the layers silent since `cutoff` stopped, and the others (sending again) not.
    /// Whether `retire(silentSince:)` would change a layer: one went silent or sends again.
    func retirementChanged(silentSince cutoff: ContinuousClock.Instant) -> Bool {
        bySSRC.values.contains { layer in (layer.lastPacketAt.map { $0 < cutoff } ?? false) != layer.retired }
    }

    mutating func retire(silentSince cutoff: ContinuousClock.Instant) {
        for (ssrc, layer) in bySSRC {
            let silent = layer.lastPacketAt.map { $0 < cutoff } ?? false
            if layer.retired != silent { bySSRC[ssrc]?.retired = silent }
        }
    }

    /// The largest size any layer showed (what the API reports as the stream's).
    var largestSize: (width: Int, height: Int)? {
        bySSRC.values.compactMap(\.size).max { $0.width * $0.height < $1.width * $1.height }
    }
}
