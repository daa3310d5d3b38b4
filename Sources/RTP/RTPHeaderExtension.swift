/// One RFC 8285 header extension element: a local identifier and its data.
public struct RTPHeaderExtension: Sendable, Equatable, Hashable {
    public var id: UInt8
    public var data: [UInt8]

    public init(id: UInt8, data: [UInt8]) {
        self.id = id
        self.data = data
    }
}

/// The form of an RTP header extension block.
public enum ExtensionProfile: Sendable, Equatable, Hashable {
    /// RFC 8285 one-byte form (profile 0xBEDE): ids 1…14, 1…16 data bytes each.
    case oneByte
    /// RFC 8285 two-byte form (profile 0x1000, appbits 0): ids 1…255, 0…255 data bytes each.
    case twoByte
    /// Any other profile (including 0x1001…0x100F, two-byte with appbits), kept raw:
    /// `data` is the block after the 4-byte profile/length header, a multiple of 4 bytes on the wire.
    case other(profile: UInt16, data: [UInt8])
}

enum ExtensionProfileID {
    static let oneByte: UInt16 = 0xBEDE
    static let twoByte: UInt16 = 0x1000
}

/// Walks the elements of an RFC 8285 extension block inside `buffer[position..<end]`, skipping
/// padding bytes. Throws when an element overruns the block.
struct ExtensionElementIterator {
    let buffer: UnsafeRawBufferPointer
    let twoByte: Bool
    var position: Int
    let end: Int

    mutating func next() throws(RTPError) -> (id: UInt8, start: Int, count: Int)? {
        while position < end {
            let b = buffer[position]
            if b == 0 { position += 1; continue }  // padding
            if twoByte {
                guard position + 1 < end else {
                    throw RTPError(offset: position, "two-byte extension id \(b) has no length byte")
                }
                let len = Int(buffer[position + 1])
                let start = position + 2
                guard start + len <= end else {
                    throw RTPError(offset: position, "two-byte extension id \(b) length \(len) overruns the extension block")
                }
                position = start + len
                return (b, start, len)
            } else {
                let id = b >> 4
                let len = Int(b & 0x0F) + 1
                // 15 is reserved ("stop parsing"); id 0 with a length is not padding: stop too
                // rather than guess, as RFC 8285 tells receivers to.
                if id == 15 || id == 0 { position = end; return nil }
                let start = position + 1
                guard start + len <= end else {
                    throw RTPError(offset: position, "one-byte extension id \(id) length \(len) overruns the extension block")
                }
                position = start + len
                return (id, start, len)
            }
        }
        return nil
    }
}

extension RTPPacket {
    /// Whether the extensions fit the one-byte form (ids 1…14, lengths 1…16).
    static func fitsOneByte(_ extensions: [RTPHeaderExtension]) -> Bool {
        extensions.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.data.count) }
    }

    /// Appends the extension block (profile, length, elements, zero padding) or nothing.
    /// Elements that no form can carry (id 0, data over 255 bytes) are skipped.
    func appendExtensionBlock(to out: inout [UInt8]) {
        let profile: UInt16
        switch extensionProfile {
        case .other(let p, let data):
            out.appendBE(p)
            let words = min((data.count + 3) / 4, Int(UInt16.max))
            out.appendBE(UInt16(words))
            out.append(contentsOf: data.prefix(words * 4))
            out.padToWord()
            return
        case nil where extensions.isEmpty:
            return
        case .twoByte:
            profile = ExtensionProfileID.twoByte
        case .oneByte, nil:
            profile = Self.fitsOneByte(extensions) ? ExtensionProfileID.oneByte : ExtensionProfileID.twoByte
        }
        out.appendBE(profile)
        let lengthAt = out.count
        out.appendBE(UInt16(0))
        let start = out.count
        if profile == ExtensionProfileID.oneByte {
            for e in extensions {
                out.append(e.id << 4 | UInt8(e.data.count - 1))
                out.append(contentsOf: e.data)
            }
        } else {
            for e in extensions where e.id != 0 && e.data.count <= 255 {
                out.append(e.id)
                out.append(UInt8(e.data.count))
                out.append(contentsOf: e.data)
            }
        }
        out.padToWord()
        let words = (out.count - start) / 4
        out[lengthAt] = UInt8(truncatingIfNeeded: words >> 8)
        out[lengthAt + 1] = UInt8(truncatingIfNeeded: words)
    }
}
