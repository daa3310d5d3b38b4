/// A packet's place in a temporally layered stream: its layer, whether its frame is a layer sync
/// (it references the base layer only), whether it starts its frame. From VP8's payload
/// descriptor (TID, Y, S) or H.264's nal_ref_idc (`H264TemporalReader`).
public struct TemporalMark: Sendable, Equatable {
    public var layer: UInt8
    public var sync: Bool
    public var startsFrame: Bool

    public init(layer: UInt8, sync: Bool, startsFrame: Bool) {
        self.layer = layer
        self.sync = sync
        self.startsFrame = startsFrame
    }
}

/// One receiver's share of a temporally layered stream (VP8 or H.264 L1T2/L1T3) at a relay: frames above
/// the highest layer it gets are not sent, and what is sent stays one stream without holes —
/// sequence numbers close over the dropped packets (a hole would be NACKed, and a player's
/// jitter buffer would wait for it). Going down happens at the next frame; going up waits for
/// a layer sync frame (RFC 7741 Y) of the higher layer, whose references the receiver has.
/// Works on the sequence numbers the relay sends otherwise ("input", after its own rewriting);
/// out of order a packet keeps its place. Sans-I/O; one per player.
public struct TemporalLayerFilter: Sendable {
    /// The highest layer the receiver may get (its allocator's or its own choice); nil: all.
    public var cap: UInt8?
    /// The highest layer it gets now (nil: all); follows `cap` at frame starts.
    public private(set) var current: UInt8?
    private struct Run: Sendable {
        var start: UInt16, count: UInt16
        /// Dropped before `start`.
        var before: UInt16
    }
    /// Runs of dropped input sequence numbers, oldest first (the newest `maxRuns`).
    private var runs: [Run] = []
    private var dropped: UInt16 = 0
    private var newest: UInt16?
    public private(set) var packetsDropped = 0
    static let maxRuns = 64

    public init(cap: UInt8? = nil) {
        self.cap = cap
        current = cap
    }

    /// The output sequence number of input packet `sequenceNumber` of temporal layer `layer`
    /// (nil for a stream without layers), or nil: not sent.
    public mutating func filter(sequenceNumber: UInt16, layer: UInt8?, sync: Bool, startsFrame: Bool) -> UInt16? {
        if startsFrame, let layer { follow(frameOf: layer, sync: sync) }
        let isNewest = newest.map { sequenceNumber.isNewer(than: $0) } ?? true
        if isNewest { newest = sequenceNumber }
        if let layer, let current, layer > current {
            packetsDropped += 1
            guard isNewest else { return nil }   // its output place is taken already: a hole
            if let last = runs.last, last.start &+ last.count == sequenceNumber {
                runs[runs.count - 1].count &+= 1
            } else {
                runs.append(Run(start: sequenceNumber, count: 1, before: dropped))
                if runs.count > Self.maxRuns { runs.removeFirst(runs.count - Self.maxRuns) }
            }
            dropped &+= 1
            return nil
        }
        return isNewest ? sequenceNumber &- dropped : output(forInput: sequenceNumber)
    }

    /// Where an input packet went out (for a resend), nil if it was dropped.
    public func output(forInput input: UInt16) -> UInt16? {
        for run in runs.reversed() {
            let offset = input &- run.start
            if offset < run.count { return nil }
            if offset < 0x8000 { return input &- run.before &- run.count }
        }
        return input &- (runs.first?.before ?? dropped)
    }

    /// The input packet that went out as `output` (a NACK names what the receiver saw).
    public func input(forOutput output: UInt16) -> UInt16 {
        for run in runs.reversed() {
            let runOutput = run.start &- run.before   // where the first packet after the run went out
            if (output &- runOutput) < 0x8000 { return output &+ run.before &+ run.count }
        }
        return output &+ (runs.first?.before ?? dropped)
    }

    /// Whether a packet of `layer` is sent now (a resend of a layer the receiver no longer gets is not).
    public func sends(layer: UInt8?) -> Bool {
        guard let layer, let current else { return true }
        return layer <= current
    }

    private mutating func follow(frameOf layer: UInt8, sync: Bool) {
        guard current != cap else { return }
        if let cap, cap < current ?? .max {
            current = cap   // down: this frame on
        } else if let current, layer > current, layer <= cap ?? .max, sync {
            self.current = layer == (cap ?? .max) ? cap : layer
        }
    }
}
