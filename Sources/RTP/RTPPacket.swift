/// An RTP packet (RFC 3550 §5.1) as a value: header fields, CSRCs, RFC 8285 header extensions,
/// payload and padding. Parsing validates every length; serializing always yields version 2.
public struct RTPPacket: Sendable, Equatable {
    public var marker: Bool
    /// 7 bits; higher bits are dropped when serializing.
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    /// At most 15 are serialized (the CC field is 4 bits).
    public var csrcs: [UInt32]
    /// RFC 8285 elements, in wire order. Empty when the block is `.other`.
    public var extensions: [RTPHeaderExtension]
    /// The form the extension block had on the wire; `nil` when there was none. When serializing,
    /// `nil` and `.oneByte` pick the one-byte form if every element fits it, else two-byte;
    /// `.twoByte` forces two-byte; `.other` writes its raw block and ignores `extensions`.
    public var extensionProfile: ExtensionProfile?
    public var payload: [UInt8]
    /// Padding bytes at the end including the count byte itself; 0 = no padding.
    public var paddingLength: UInt8

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32,
                ssrc: UInt32, csrcs: [UInt32] = [], extensions: [RTPHeaderExtension] = [],
                extensionProfile: ExtensionProfile? = nil, payload: [UInt8] = [], paddingLength: UInt8 = 0) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = extensions
        self.extensionProfile = extensionProfile
        self.payload = payload
        self.paddingLength = paddingLength
    }

    public init(parsing bytes: [UInt8]) throws(RTPError) {
        let result: Result<RTPPacket, RTPError> = bytes.withUnsafeBytes { p in
            do throws(RTPError) {
                return .success(try RTPPacket(p))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// Parses from raw memory (copies what it keeps).
    public init(_ p: UnsafeRawBufferPointer) throws(RTPError) {
        let layout = try RTPLayout.parse(p)
        marker = p[1] & 0x80 != 0
        payloadType = p[1] & 0x7F
        sequenceNumber = loadBE16(p, 2)
        timestamp = loadBE32(p, 4)
        ssrc = loadBE32(p, 8)
        csrcs = (0..<layout.csrcCount).map { loadBE32(p, 12 + 4 * $0) }
        extensions = []
        switch layout.extensionKind {
        case .none:
            extensionProfile = nil
        case .other:
            extensionProfile = .other(profile: layout.extensionProfile, data: Array(p[layout.extensionRange]))
        case .oneByte, .twoByte:
            let two = layout.extensionKind == .twoByte
            extensionProfile = two ? .twoByte : .oneByte
            var it = ExtensionElementIterator(buffer: p, twoByte: two, position: layout.extensionRange.lowerBound,
                                              end: layout.extensionRange.upperBound)
            while let e = try it.next() {
                extensions.append(RTPHeaderExtension(id: e.id, data: Array(p[e.start..<(e.start + e.count)])))
            }
        }
        payload = Array(p[layout.payloadRange])
        paddingLength = UInt8(layout.paddingLength)
    }

    /// Wire bytes. Padding bytes are zeros followed by the count.
    public func serialize() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(12 + 4 * csrcs.count + 4 + extensions.reduce(0) { $0 + 2 + $1.data.count }
                            + payload.count + Int(paddingLength))
        let cc = min(csrcs.count, 15)
        let hasExtension = extensionProfile != nil || !extensions.isEmpty
        out.append(0x80 | (paddingLength > 0 ? 0x20 : 0) | (hasExtension ? 0x10 : 0) | UInt8(cc))
        out.append((marker ? 0x80 : 0) | (payloadType & 0x7F))
        out.appendBE(sequenceNumber)
        out.appendBE(timestamp)
        out.appendBE(ssrc)
        for c in csrcs.prefix(cc) { out.appendBE(c) }
        appendExtensionBlock(to: &out)
        out.append(contentsOf: payload)
        if paddingLength > 0 {
            out.append(contentsOf: repeatElement(0, count: Int(paddingLength) - 1))
            out.append(paddingLength)
        }
        return out
    }

    /// The data of the first extension element with this id.
    public func extensionData(id: UInt8) -> [UInt8]? {
        extensions.first { $0.id == id }?.data
    }

    /// Replaces the first element with this id, or appends one. A raw `.other` block is dropped
    /// (the packet switches to automatic RFC 8285 form selection).
    public mutating func setExtension(id: UInt8, data: [UInt8]) {
        if case .other = extensionProfile { extensionProfile = nil }
        if let i = extensions.firstIndex(where: { $0.id == id }) {
            extensions[i].data = data
        } else {
            extensions.append(RTPHeaderExtension(id: id, data: data))
        }
    }

    /// Removes every element with this id.
    public mutating func removeExtension(id: UInt8) {
        extensions.removeAll { $0.id == id }
    }
}
