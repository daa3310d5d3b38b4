/// Transport-wide congestion control feedback (RTPFB FMT 15,
/// draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1).
///
/// Statuses travel as 16-bit chunks: run-length (0 | symbol:2 | run:13) or status vector
/// (1 | 0 | fourteen 1-bit symbols, or 1 | 1 | seven 2-bit symbols). Symbols: 0 not received,
/// 1 received with a 1-byte delta (0…255), 2 received with a 2-byte signed delta, 3 reserved.
public struct TransportCCFeedback: Sendable, Equatable, Hashable {
    public struct PacketStatus: Sendable, Equatable, Hashable {
        public var sequence: UInt16
        /// Receive time relative to the previous received packet (or to the reference time for
        /// the first), in 250 µs ticks; nil when not received. Serialized as one byte when
        /// 0…255, else two bytes clamped to −32768…32767.
        public var receivedDelta: Int?

        public init(sequence: UInt16, receivedDelta: Int?) {
            self.sequence = sequence
            self.receivedDelta = receivedDelta
        }
    }

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public var baseSequence: UInt16
    public var feedbackPacketCount: UInt8
    /// 24 bits, in 64 ms units.
    public var referenceTime: UInt32
    /// One status per transport sequence number from `baseSequence` on, consecutively:
    /// serializing writes them in order and ignores their `sequence` fields (at most 65535).
    public var packets: [PacketStatus]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, baseSequence: UInt16, feedbackPacketCount: UInt8,
                referenceTime: UInt32, packets: [PacketStatus]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.baseSequence = baseSequence
        self.feedbackPacketCount = feedbackPacketCount
        self.referenceTime = referenceTime
        self.packets = packets
    }

    /// Builds the consecutive statuses from `baseSequence` out of the deltas (nil = lost).
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, baseSequence: UInt16, feedbackPacketCount: UInt8,
                referenceTime: UInt32, receivedDeltas: [Int?]) {
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, baseSequence: baseSequence,
                  feedbackPacketCount: feedbackPacketCount, referenceTime: referenceTime,
                  packets: receivedDeltas.enumerated().map {
                      PacketStatus(sequence: baseSequence &+ UInt16(truncatingIfNeeded: $0.offset), receivedDelta: $0.element)
                  })
    }

    /// Reference time in microseconds.
    public var referenceTimeMicroseconds: Int64 { Int64(referenceTime & 0xFF_FFFF) * 64_000 }

    /// Receive time of each received packet in microseconds on the sender of this feedback's
    /// clock (reference time plus the running sum of deltas).
    public var arrivalTimes: [(sequence: UInt16, microseconds: Int64)] {
        var t = referenceTimeMicroseconds
        var out: [(sequence: UInt16, microseconds: Int64)] = []
        for p in packets {
            guard let d = p.receivedDelta else { continue }
            t += Int64(d) * 250
            out.append((p.sequence, t))
        }
        return out
    }

    init(_ r: inout RTCPReader) throws(RTCPError) {
        senderSSRC = try r.u32("TWCC sender SSRC")
        mediaSSRC = try r.u32("TWCC media SSRC")
        baseSequence = try r.u16("TWCC base sequence")
        let statusCount = Int(try r.u16("TWCC status count"))
        referenceTime = try r.u24("TWCC reference time")
        feedbackPacketCount = try r.u8("TWCC feedback packet count")

        var symbols: [UInt8] = []
        symbols.reserveCapacity(statusCount)
        while symbols.count < statusCount {
            let at = r.position
            let chunk = try r.u16("TWCC packet chunk")
            if chunk & 0x8000 == 0 {
                let symbol = UInt8((chunk >> 13) & 0x3)
                let run = min(Int(chunk & 0x1FFF), statusCount - symbols.count)
                if symbol == 3 && run > 0 { throw RTCPError(offset: at, "TWCC run-length chunk with reserved status 3") }
                symbols.append(contentsOf: repeatElement(symbol, count: run))
            } else if chunk & 0x4000 == 0 {
                for i in 0..<14 where symbols.count < statusCount {
                    symbols.append(UInt8((chunk >> (13 - i)) & 0x1))
                }
            } else {
                for i in 0..<7 where symbols.count < statusCount {
                    let symbol = UInt8((chunk >> (12 - 2 * i)) & 0x3)
                    if symbol == 3 { throw RTCPError(offset: at, "TWCC status vector chunk with reserved status 3") }
                    symbols.append(symbol)
                }
            }
        }

        packets = []
        packets.reserveCapacity(statusCount)
        for (i, symbol) in symbols.enumerated() {
            let delta: Int?
            switch symbol {
            case 1: delta = Int(try r.u8("TWCC small receive delta"))
            case 2: delta = Int(Int16(bitPattern: try r.u16("TWCC large receive delta")))
            default: delta = nil
            }
            packets.append(PacketStatus(sequence: baseSequence &+ UInt16(truncatingIfNeeded: i), receivedDelta: delta))
        }
        // Up to three zero bytes may pad the deltas to a 32-bit boundary.
        guard r.remaining < 4 else { throw r.error("\(r.remaining) bytes after the TWCC receive deltas") }
    }

    static func symbol(for delta: Int?) -> UInt8 {
        guard let d = delta else { return 0 }
        return (0...255).contains(d) ? 1 : 2
    }

    /// Greedy chunking: a run-length chunk for 7+ equal symbols, else a 1-bit vector when the
    /// next 14 symbols need no large deltas, else a 2-bit vector of 7.
    static func chunks(for symbols: [UInt8]) -> [UInt16] {
        var chunks: [UInt16] = []
        var i = 0
        while i < symbols.count {
            var run = 1
            while i + run < symbols.count && symbols[i + run] == symbols[i] && run < 0x1FFF { run += 1 }
            if run >= 7 {
                chunks.append(UInt16(symbols[i]) << 13 | UInt16(run))
                i += run
                continue
            }
            let window14 = symbols[i..<min(i + 14, symbols.count)]
            if window14.allSatisfy({ $0 <= 1 }) {
                var chunk: UInt16 = 0x8000
                for (k, s) in window14.enumerated() { chunk |= UInt16(s) << (13 - k) }
                chunks.append(chunk)
                i += window14.count
            } else {
                let window7 = symbols[i..<min(i + 7, symbols.count)]
                var chunk: UInt16 = 0xC000
                for (k, s) in window7.enumerated() { chunk |= UInt16(s) << (12 - 2 * k) }
                chunks.append(chunk)
                i += window7.count
            }
        }
        return chunks
    }

    func appendBody(to out: inout [UInt8]) {
        let list = packets.prefix(Int(UInt16.max))
        out.appendBE(senderSSRC)
        out.appendBE(mediaSSRC)
        out.appendBE(baseSequence)
        out.appendBE(UInt16(list.count))
        out.appendBE24(referenceTime & 0xFF_FFFF)
        out.append(feedbackPacketCount)
        let symbols = list.map { Self.symbol(for: $0.receivedDelta) }
        for c in Self.chunks(for: symbols) { out.appendBE(c) }
        for p in list {
            guard let d = p.receivedDelta else { continue }
            if (0...255).contains(d) {
                out.append(UInt8(d))
            } else {
                out.appendBE(UInt16(bitPattern: Int16(clamping: d)))
            }
        }
        out.padToWord()
    }
}
