import Media

/// RFC 6184 packetization-mode 1 sender: single NAL unit packets, STAP-A for runs of small NAL
/// units, FU-A for units larger than a payload. SPS and PPS go in front of every IDR: the last
/// ones seen are inserted when an IDR frame arrives without them.
public struct H264Packetizer: Sendable {
    public private(set) var lastSPS: [UInt8]?
    public private(set) var lastPPS: [UInt8]?

    public init() {}

    public mutating func packetize(_ frame: EncodedFrame,
                                   maxPayloadSize: Int = RTPPayloadLimits.defaultMaxPayloadSize) -> [RTPPayload] {
        packetize(annexB: frame.data, maxPayloadSize: maxPayloadSize)
    }

    /// Payloads of one access unit (Annex-B); the last one has the marker. Empty input gives none.
    /// A `maxPayloadSize` below 3 (FU-A headers plus one byte) is raised to 3.
    public mutating func packetize(annexB data: [UInt8],
                                   maxPayloadSize: Int = RTPPayloadLimits.defaultMaxPayloadSize) -> [RTPPayload] {
        let limit = max(maxPayloadSize, 3)
        var nals: [ArraySlice<UInt8>] = AnnexB.nalUnitRanges(data).map { data[$0] }
        guard !nals.isEmpty else { return [] }

        var hasSPS = false, hasPPS = false, idrIndex: Int?
        for (i, nal) in nals.enumerated() {
            switch nal[nal.startIndex] & 0x1F {
            case H264NALType.sps: hasSPS = true; lastSPS = Array(nal)
            case H264NALType.pps: hasPPS = true; lastPPS = Array(nal)
            case H264NALType.idr: if idrIndex == nil { idrIndex = i }
            default: break
            }
        }
        if let idr = idrIndex {
            // Parameter sets go right before the first IDR slice (after any AUD/SEI).
            var insert: [ArraySlice<UInt8>] = []
            if !hasSPS, let sps = lastSPS { insert.append(sps[...]) }
            if !hasPPS, let pps = lastPPS { insert.append(pps[...]) }
            nals.insert(contentsOf: insert, at: idr)
        }

        var out: [RTPPayload] = []
        var i = 0
        while i < nals.count {
            let nal = nals[i]
            if nal.count > limit {
                appendFragments(of: nal, limit: limit, to: &out)
                i += 1
                continue
            }
            // Greedy STAP-A: 1 header byte, then 2-byte size + unit for each.
            var size = 1 + 2 + nal.count
            var j = i + 1
            while j < nals.count, size + 2 + nals[j].count <= limit {
                size += 2 + nals[j].count
                j += 1
            }
            if j - i >= 2 {
                var stap: [UInt8] = []
                stap.reserveCapacity(size)
                var fBit: UInt8 = 0, nri: UInt8 = 0
                for unit in nals[i..<j] {
                    let h = unit[unit.startIndex]
                    fBit |= h & 0x80
                    nri = max(nri, h & 0x60)
                }
                stap.append(fBit | nri | H264NALType.stapA)
                for unit in nals[i..<j] {
                    stap.append(UInt8(truncatingIfNeeded: unit.count >> 8))
                    stap.append(UInt8(truncatingIfNeeded: unit.count))
                    stap.append(contentsOf: unit)
                }
                out.append(RTPPayload(bytes: stap, marker: false))
            } else {
                out.append(RTPPayload(bytes: Array(nal), marker: false))
            }
            i = j
        }
        if !out.isEmpty { out[out.count - 1].marker = true }
        return out
    }

    private func appendFragments(of nal: ArraySlice<UInt8>, limit: Int, to out: inout [RTPPayload]) {
        let header = nal[nal.startIndex]
        let indicator = (header & 0xE0) | H264NALType.fuA
        let type = header & 0x1F
        var offset = nal.startIndex + 1
        let sizes = evenChunkSizes(total: nal.count - 1, capacity: limit - 2)
        for (k, size) in sizes.enumerated() {
            var fu: [UInt8] = []
            fu.reserveCapacity(size + 2)
            fu.append(indicator)
            fu.append((k == 0 ? 0x80 : 0) | (k == sizes.count - 1 ? 0x40 : 0) | type)
            fu.append(contentsOf: nal[offset..<(offset + size)])
            offset += size
            out.append(RTPPayload(bytes: fu, marker: false))
        }
    }
}
