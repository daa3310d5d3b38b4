/// Source description (PT 202, RFC 3550 §6.5). At most 31 chunks are serialized; item text is
/// cut to 255 UTF-8 bytes (at a character boundary).
public struct SourceDescription: Sendable, Equatable, Hashable {
    public struct Item: Sendable, Equatable, Hashable {
        /// 1 CNAME, 2 NAME, 3 EMAIL, 4 PHONE, 5 LOC, 6 TOOL, 7 NOTE, 8 PRIV (see `SDESItemType`).
        public var type: UInt8
        /// The item's bytes as on the wire (at most 255), so odd encodings round-trip exactly.
        public private(set) var data: [UInt8]

        /// The bytes as UTF-8 (invalid sequences read as U+FFFD); setting cuts to 255 bytes.
        public var text: String {
            get { String(decoding: data, as: UTF8.self) }
            set { data = utf8Prefix(newValue, maxBytes: 255) }
        }

        public init(type: UInt8, text: String) {
            self.type = type
            self.data = utf8Prefix(text, maxBytes: 255)
        }

        public init(type: UInt8, data: [UInt8]) {
            self.type = type
            self.data = Array(data.prefix(255))
        }
    }

    public struct Chunk: Sendable, Equatable, Hashable {
        public var ssrc: UInt32
        public var items: [Item]

        public init(ssrc: UInt32, items: [Item]) {
            self.ssrc = ssrc
            self.items = items
        }
    }

    public var chunks: [Chunk]

    public init(chunks: [Chunk]) { self.chunks = chunks }

    /// The common case: one source with its CNAME.
    public init(ssrc: UInt32, cname: String) {
        chunks = [Chunk(ssrc: ssrc, items: [Item(type: SDESItemType.cname, text: cname)])]
    }

    /// CNAME of the given source, if present.
    public func cname(of ssrc: UInt32) -> String? {
        chunks.first { $0.ssrc == ssrc }?.items.first { $0.type == SDESItemType.cname }?.text
    }

    init(count: UInt8, _ r: inout RTCPReader) throws(RTCPError) {
        chunks = []
        for _ in 0..<count {
            let chunkStart = r.position
            let ssrc = try r.u32("SDES chunk SSRC")
            var items: [Item] = []
            while true {
                let type = try r.u8("SDES item type (chunk not terminated by a null item)")
                if type == 0 { break }
                let len = Int(try r.u8("SDES item length"))
                let text = try r.take(len, "SDES item text")
                items.append(Item(type: type, data: text))
            }
            // Null octets pad the chunk to a 32-bit boundary (the body may end first if the
            // packet's own padding was stripped).
            while (r.position - chunkStart) % 4 != 0 && !r.isAtEnd { r.position += 1 }
            chunks.append(Chunk(ssrc: ssrc, items: items))
        }
        guard r.isAtEnd else { throw r.error("\(r.remaining) bytes after \(count) SDES chunks") }
    }

    func appendBody(to out: inout [UInt8]) {
        for chunk in chunks.prefix(31) {
            out.appendBE(chunk.ssrc)
            for item in chunk.items where item.type != 0 {
                out.append(item.type)
                out.append(UInt8(item.data.count))
                out.append(contentsOf: item.data)
            }
            out.append(0)  // end of item list
            out.padToWord()
        }
    }
}

/// SDES item types (RFC 3550 §6.5).
public enum SDESItemType {
    public static let end: UInt8 = 0
    public static let cname: UInt8 = 1
    public static let name: UInt8 = 2
    public static let email: UInt8 = 3
    public static let phone: UInt8 = 4
    public static let location: UInt8 = 5
    public static let tool: UInt8 = 6
    public static let note: UInt8 = 7
    public static let priv: UInt8 = 8
}

/// Goodbye (PT 203, RFC 3550 §6.6). At most 31 SSRCs are serialized; the reason is cut to 255
/// UTF-8 bytes.
public struct Goodbye: Sendable, Equatable, Hashable {
    public var ssrcs: [UInt32]
    /// The reason's bytes as on the wire (at most 255), so odd encodings round-trip exactly.
    public private(set) var reasonData: [UInt8]?

    /// The reason as UTF-8 (invalid sequences read as U+FFFD); setting cuts to 255 bytes.
    public var reason: String? {
        get { reasonData.map { String(decoding: $0, as: UTF8.self) } }
        set { reasonData = newValue.map { utf8Prefix($0, maxBytes: 255) } }
    }

    public init(ssrcs: [UInt32], reason: String? = nil) {
        self.ssrcs = ssrcs
        self.reasonData = reason.map { utf8Prefix($0, maxBytes: 255) }
    }

    init(count: UInt8, _ r: inout RTCPReader) throws(RTCPError) {
        ssrcs = []
        for _ in 0..<count { ssrcs.append(try r.u32("BYE SSRC")) }
        if r.isAtEnd {
            reasonData = nil
        } else {
            let len = Int(try r.u8("BYE reason length"))
            reasonData = try r.take(len, "BYE reason")
            // The rest is padding to a 32-bit boundary.
        }
    }

    func appendBody(to out: inout [UInt8]) {
        for s in ssrcs.prefix(31) { out.appendBE(s) }
        if let text = reasonData {
            out.append(UInt8(text.count))
            out.append(contentsOf: text)
            out.padToWord()
        }
    }
}

/// The UTF-8 bytes of `s`, cut to at most `maxBytes` without splitting a character's encoding.
func utf8Prefix(_ s: String, maxBytes: Int) -> [UInt8] {
    var bytes = Array(s.utf8)
    guard bytes.count > maxBytes else { return bytes }
    var cut = maxBytes
    while cut > 0 && bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
    bytes.removeSubrange(cut...)
    return bytes
}
