/// RFC 6184 packetization-mode 1 receiver: payloads of one frame (same timestamp, sequence
/// order) → Annex-B with 4-byte start codes. Every length is checked; anything malformed
/// throws. Remembers the last SPS/PPS and puts them in front of an IDR frame that lacks them.
public struct H264Depacketizer: Sendable {
    public private(set) var lastSPS: [UInt8]?
    public private(set) var lastPPS: [UInt8]?

    public init() {}

    public mutating func depacketize(_ payloads: [[UInt8]]) throws(PayloadError) -> DepacketizedFrame {
        guard !payloads.isEmpty else { throw PayloadError(format: "H264", packetIndex: 0, offset: 0, "no payloads") }
        var out: [UInt8] = []
        out.reserveCapacity(payloads.reduce(0) { $0 + $1.count } + 16)
        var hasSPS = false, hasPPS = false, hasIDR = false
        var firstIDROffset: Int?
        // Offset in `out` of the FU-A unit being reassembled, and its type.
        var fragment: (type: UInt8, index: Int)?

        func note(_ header: UInt8, at offset: Int) {
            switch header & 0x1F {
            case H264NALType.sps: hasSPS = true
            case H264NALType.pps: hasPPS = true
            case H264NALType.idr:
                hasIDR = true
                if firstIDROffset == nil { firstIDROffset = offset }
            default: break
            }
        }

        for (index, p) in payloads.enumerated() {
            func fail(_ offset: Int, _ message: String) -> PayloadError {
                PayloadError(format: "H264", packetIndex: index, offset: offset, message)
            }
            guard let header = p.first else { throw fail(0, "empty payload") }
            let type = header & 0x1F
            if fragment != nil && type != H264NALType.fuA {
                throw fail(0, "NAL type \(type) interrupts an unfinished FU-A")
            }
            switch type {
            case 1...23:
                let at = out.count
                out.append(contentsOf: AnnexB.startCode)
                out.append(contentsOf: p)
                note(header, at: at)
                remember(p[...])
            case H264NALType.stapA:
                var offset = 1
                guard p.count > 1 else { throw fail(1, "STAP-A without aggregation units") }
                while offset < p.count {
                    guard offset + 2 <= p.count else {
                        throw fail(offset, "STAP-A unit size needs 2 bytes, \(p.count - offset) left")
                    }
                    let size = Int(p[offset]) << 8 | Int(p[offset + 1])
                    offset += 2
                    guard size > 0 else { throw fail(offset - 2, "STAP-A unit of size 0") }
                    guard size <= p.count - offset else {
                        throw fail(offset - 2, "STAP-A unit size \(size) overruns the \(p.count - offset) bytes left")
                    }
                    let inner = p[offset] & 0x1F
                    guard (1...23).contains(inner) else { throw fail(offset, "NAL type \(inner) inside STAP-A") }
                    let at = out.count
                    out.append(contentsOf: AnnexB.startCode)
                    out.append(contentsOf: p[offset..<(offset + size)])
                    note(p[offset], at: at)
                    remember(p[offset..<(offset + size)])
                    offset += size
                }
            case H264NALType.fuA:
                guard p.count >= 3 else { throw fail(0, "FU-A of \(p.count) bytes, need at least 3") }
                let fu = p[1]
                let start = fu & 0x80 != 0, end = fu & 0x40 != 0
                let inner = fu & 0x1F
                guard !(start && end) else { throw fail(1, "FU-A with both start and end bits") }
                guard (1...23).contains(inner) else { throw fail(1, "NAL type \(inner) inside FU-A") }
                if start {
                    guard fragment == nil else { throw fail(1, "FU-A start while another FU-A is unfinished") }
                    let at = out.count
                    out.append(contentsOf: AnnexB.startCode)
                    out.append((header & 0xE0) | inner)
                    fragment = (inner, at)
                    note(inner, at: at)
                } else {
                    guard let f = fragment else { throw fail(1, "FU-A continuation without a start") }
                    guard f.type == inner else { throw fail(1, "FU-A type \(inner) differs from its start's \(f.type)") }
                }
                out.append(contentsOf: p[2...])
                if end, let f = fragment {
                    remember(out[(f.index + 4)...])
                    fragment = nil
                }
            default:
                throw fail(0, "unsupported NAL unit type \(type) (packetization-mode 1 allows 1–23, 24 and 28)")
            }
        }
        if fragment != nil {
            throw PayloadError(format: "H264", packetIndex: payloads.count - 1, offset: 1, "frame ends inside an FU-A (no end bit)")
        }
        if hasIDR, !(hasSPS && hasPPS), let at = firstIDROffset {
            var insert: [UInt8] = []
            if !hasSPS, let sps = lastSPS { insert += AnnexB.startCode + sps; hasSPS = true }
            if !hasPPS, let pps = lastPPS { insert += AnnexB.startCode + pps; hasPPS = true }
            out.insert(contentsOf: insert, at: at)
        }
        return DepacketizedFrame(data: out, isKeyframe: hasIDR && hasSPS && hasPPS)
    }

    private mutating func remember(_ nal: ArraySlice<UInt8>) {
        guard let h = nal.first else { return }
        switch h & 0x1F {
        case H264NALType.sps: lastSPS = Array(nal)
        case H264NALType.pps: lastPPS = Array(nal)
        default: break
        }
    }
}
