/// The attributes of RFC 8489, RFC 8445 and RFC 8656 (TURN) this stack understands; all others stay `.unknown`.
public enum STUNAttribute: Sendable, Equatable {
    case xorMappedAddress(SocketAddress)
    case mappedAddress(SocketAddress)
    case username(String)
    /// The 20-byte HMAC-SHA1 as received. `encode` computes its own and skips this case.
    case messageIntegrity([UInt8])
    /// The CRC as received. `encode` computes its own and skips this case.
    case fingerprint(UInt32)
    case errorCode(code: Int, reason: String)
    case priority(UInt32)
    case useCandidate
    case iceControlling(UInt64)
    case iceControlled(UInt64)
    case software(String)
    // TURN (RFC 8656 §18).
    case realm(String)
    case nonce(String)
    /// Seconds.
    case lifetime(UInt32)
    /// An IP protocol number: 17 is UDP.
    case requestedTransport(UInt8)
    case xorPeerAddress(SocketAddress)
    case xorRelayedAddress(SocketAddress)
    /// 0x4000–0x7FFF.
    case channelNumber(UInt16)
    case data([UInt8])
    case unknown(type: UInt16, value: [UInt8])

    /// Attribute type codes from the IANA STUN registry.
    public enum TypeCode {
        public static let mappedAddress: UInt16 = 0x0001
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let unknownAttributes: UInt16 = 0x000A
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let software: UInt16 = 0x8022
        public static let channelNumber: UInt16 = 0x000C
        public static let lifetime: UInt16 = 0x000D
        public static let xorPeerAddress: UInt16 = 0x0012
        public static let data: UInt16 = 0x0013
        public static let realm: UInt16 = 0x0014
        public static let nonce: UInt16 = 0x0015
        public static let xorRelayedAddress: UInt16 = 0x0016
        public static let requestedTransport: UInt16 = 0x0019
        public static let fingerprint: UInt16 = 0x8028
        public static let iceControlled: UInt16 = 0x8029
        public static let iceControlling: UInt16 = 0x802A
    }

    public var type: UInt16 {
        switch self {
        case .xorMappedAddress: return TypeCode.xorMappedAddress
        case .mappedAddress: return TypeCode.mappedAddress
        case .username: return TypeCode.username
        case .messageIntegrity: return TypeCode.messageIntegrity
        case .fingerprint: return TypeCode.fingerprint
        case .errorCode: return TypeCode.errorCode
        case .priority: return TypeCode.priority
        case .useCandidate: return TypeCode.useCandidate
        case .iceControlling: return TypeCode.iceControlling
        case .iceControlled: return TypeCode.iceControlled
        case .software: return TypeCode.software
        case .realm: return TypeCode.realm
        case .nonce: return TypeCode.nonce
        case .lifetime: return TypeCode.lifetime
        case .requestedTransport: return TypeCode.requestedTransport
        case .xorPeerAddress: return TypeCode.xorPeerAddress
        case .xorRelayedAddress: return TypeCode.xorRelayedAddress
        case .channelNumber: return TypeCode.channelNumber
        case .data: return TypeCode.data
        case .unknown(let type, _): return type
        }
    }

    /// The value bytes (without header or padding). XOR-MAPPED-ADDRESS needs the transaction ID.
    func encodeValue(transactionID: [UInt8]) -> [UInt8] {
        switch self {
        case .xorMappedAddress(let address), .xorPeerAddress(let address), .xorRelayedAddress(let address):
            return Self.encodeAddress(address, xorWith: transactionID)
        case .mappedAddress(let address):
            return Self.encodeAddress(address, xorWith: nil)
        case .username(let text), .software(let text), .realm(let text), .nonce(let text):
            return Array(text.utf8)
        case .lifetime(let seconds):
            return seconds.bigEndianBytes
        case .requestedTransport(let proto):
            return [proto, 0, 0, 0]
        case .channelNumber(let number):
            return number.bigEndianBytes + [0, 0]
        case .data(let bytes):
            return bytes
        case .messageIntegrity(let mac):
            return mac
        case .fingerprint(let value), .priority(let value):
            return value.bigEndianBytes
        case .errorCode(let code, let reason):
            let clamped = max(0, min(code, 799))
            return [0, 0, UInt8(clamped / 100), UInt8(clamped % 100)] + Array(reason.utf8)
        case .useCandidate:
            return []
        case .iceControlling(let value), .iceControlled(let value):
            return value.bigEndianBytes
        case .unknown(_, let value):
            return value
        }
    }

    /// Decodes one attribute value; `offset` is where the value starts, for error messages.
    static func decode(type: UInt16, value: ArraySlice<UInt8>, offset: Int, transactionID: [UInt8]) throws(STUNError) -> STUNAttribute {
        func requireLength(_ n: Int, _ name: String) throws(STUNError) {
            guard value.count == n else {
                throw STUNError(.malformedAttribute, offset: offset, "\(name) must be \(n) bytes, has \(value.count)")
            }
        }
        switch type {
        case TypeCode.xorMappedAddress:
            return .xorMappedAddress(try decodeAddress(value, offset: offset, xorWith: transactionID, name: "XOR-MAPPED-ADDRESS"))
        case TypeCode.mappedAddress:
            return .mappedAddress(try decodeAddress(value, offset: offset, xorWith: nil, name: "MAPPED-ADDRESS"))
        case TypeCode.username:
            guard value.count <= 512 else {
                throw STUNError(.malformedAttribute, offset: offset, "USERNAME longer than 512 bytes (\(value.count))")
            }
            return .username(String(decoding: value, as: UTF8.self))
        case TypeCode.software:
            return .software(String(decoding: value, as: UTF8.self))
        case TypeCode.realm, TypeCode.nonce:
            // RFC 8656 §18.6/18.7 and RFC 8489 §14.9/14.10: fewer than 128 characters (≤ 763 bytes).
            guard value.count <= 763 else {
                throw STUNError(.malformedAttribute, offset: offset, "\(type == TypeCode.realm ? "REALM" : "NONCE") longer than 763 bytes (\(value.count))")
            }
            let text = String(decoding: value, as: UTF8.self)
            return type == TypeCode.realm ? .realm(text) : .nonce(text)
        case TypeCode.lifetime:
            try requireLength(4, "LIFETIME")
            return .lifetime(UInt32(bigEndianBytes: value))
        case TypeCode.requestedTransport:
            try requireLength(4, "REQUESTED-TRANSPORT")
            return .requestedTransport(value[value.startIndex])
        case TypeCode.channelNumber:
            try requireLength(4, "CHANNEL-NUMBER")
            return .channelNumber(UInt16(bigEndianBytes: value))
        case TypeCode.xorPeerAddress:
            return .xorPeerAddress(try decodeAddress(value, offset: offset, xorWith: transactionID, name: "XOR-PEER-ADDRESS"))
        case TypeCode.xorRelayedAddress:
            return .xorRelayedAddress(try decodeAddress(value, offset: offset, xorWith: transactionID, name: "XOR-RELAYED-ADDRESS"))
        case TypeCode.data:
            return .data(Array(value))
        case TypeCode.messageIntegrity:
            try requireLength(20, "MESSAGE-INTEGRITY")
            return .messageIntegrity(Array(value))
        case TypeCode.fingerprint:
            try requireLength(4, "FINGERPRINT")
            return .fingerprint(UInt32(bigEndianBytes: value))
        case TypeCode.priority:
            try requireLength(4, "PRIORITY")
            return .priority(UInt32(bigEndianBytes: value))
        case TypeCode.useCandidate:
            try requireLength(0, "USE-CANDIDATE")
            return .useCandidate
        case TypeCode.iceControlling:
            try requireLength(8, "ICE-CONTROLLING")
            return .iceControlling(UInt64(bigEndianBytes: value))
        case TypeCode.iceControlled:
            try requireLength(8, "ICE-CONTROLLED")
            return .iceControlled(UInt64(bigEndianBytes: value))
        case TypeCode.errorCode:
            guard value.count >= 4 else {
                throw STUNError(.malformedAttribute, offset: offset, "ERROR-CODE shorter than 4 bytes (\(value.count))")
            }
            let base = value.startIndex
            let errorClass = Int(value[base + 2] & 0x07)
            let number = Int(value[base + 3])
            guard (3...6).contains(errorClass), number < 100 else {
                throw STUNError(.malformedAttribute, offset: offset + 2, "ERROR-CODE class \(errorClass) number \(number) out of range")
            }
            return .errorCode(code: errorClass * 100 + number, reason: String(decoding: value.dropFirst(4), as: UTF8.self))
        default:
            return .unknown(type: type, value: Array(value))
        }
    }

    // MARK: address encoding (RFC 8489 §14.1, §14.2)

    static func encodeAddress(_ address: SocketAddress, xorWith transactionID: [UInt8]?) -> [UInt8] {
        let xorPort: UInt16 = transactionID == nil ? 0 : UInt16(STUNMessage.magicCookie >> 16)
        let port = (address.port ^ xorPort).bigEndianBytes
        switch address.ip {
        case .v4(let ip):
            let xorIP = transactionID == nil ? 0 : STUNMessage.magicCookie
            return [0, 0x01] + port + (ip ^ xorIP).bigEndianBytes
        case .v6(let bytes):
            var ip = Array(bytes.prefix(16))
            while ip.count < 16 { ip.append(0) }
            if let transactionID {
                let mask = STUNMessage.magicCookie.bigEndianBytes + paddedID(transactionID)
                for i in 0..<16 { ip[i] ^= mask[i] }
            }
            return [0, 0x02] + port + ip
        }
    }

    static func decodeAddress(_ value: ArraySlice<UInt8>, offset: Int, xorWith transactionID: [UInt8]?, name: String) throws(STUNError) -> SocketAddress {
        guard value.count >= 4 else {
            throw STUNError(.malformedAttribute, offset: offset, "\(name) shorter than 4 bytes (\(value.count))")
        }
        let base = value.startIndex
        let family = value[base + 1]
        let xorPort: UInt16 = transactionID == nil ? 0 : UInt16(STUNMessage.magicCookie >> 16)
        let port = UInt16(bigEndianBytes: value[(base + 2)..<(base + 4)]) ^ xorPort
        switch family {
        case 0x01:
            guard value.count == 8 else {
                throw STUNError(.malformedAttribute, offset: offset, "\(name) IPv4 value must be 8 bytes, has \(value.count)")
            }
            let xorIP = transactionID == nil ? 0 : STUNMessage.magicCookie
            return SocketAddress(ip: .v4(UInt32(bigEndianBytes: value[(base + 4)..<(base + 8)]) ^ xorIP), port: port)
        case 0x02:
            guard value.count == 20 else {
                throw STUNError(.malformedAttribute, offset: offset, "\(name) IPv6 value must be 20 bytes, has \(value.count)")
            }
            var ip = Array(value[(base + 4)..<(base + 20)])
            if let transactionID {
                let mask = STUNMessage.magicCookie.bigEndianBytes + paddedID(transactionID)
                for i in 0..<16 { ip[i] ^= mask[i] }
            }
            return SocketAddress(ip: .v6(ip), port: port)
        default:
            throw STUNError(.malformedAttribute, offset: offset + 1, "\(name) has unknown address family 0x\(String(family, radix: 16))")
        }
    }

    /// A transaction ID forced to 12 bytes, so a caller's bad value cannot cause an out-of-range index.
    static func paddedID(_ id: [UInt8]) -> [UInt8] {
        var out = Array(id.prefix(12))
        while out.count < 12 { out.append(0) }
        return out
    }
}

// MARK: - big-endian helpers

extension FixedWidthInteger {
    var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: self.bigEndian) { Array($0) }
    }

    /// Reads `MemoryLayout<Self>.size` bytes (or fewer, zero-extended) in network order.
    init<C: Collection>(bigEndianBytes bytes: C) where C.Element == UInt8 {
        var value: Self = 0
        for byte in bytes.prefix(MemoryLayout<Self>.size) {
            value = (value << 8) | Self(byte)
        }
        self = value
    }
}
