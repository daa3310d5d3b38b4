/// RFC 8832 Data Channel Establishment Protocol messages (PPID 50), as value types.
public enum DCEPMessage: Sendable, Equatable {
    case open(DataChannelOpen)
    case ack

    static let openType: UInt8 = 0x03
    static let ackType: UInt8 = 0x02

    /// Parses one DCEP message; never traps on short or inconsistent input.
    public init(parsing bytes: [UInt8]) throws(SCTPError) {
        guard let type = bytes.first else { throw SCTPError("DCEP: empty message") }
        switch type {
        case Self.ackType:
            self = .ack
        case Self.openType:
            self = .open(try DataChannelOpen(parsing: bytes))
        default:
            throw SCTPError("DCEP: unknown message type 0x\(String(type, radix: 16))")
        }
    }

    public var bytes: [UInt8] {
        switch self {
        case .ack: return [Self.ackType]
        case .open(let open): return open.bytes
        }
    }
}

/// RFC 8832 §5.1 channel types: the high bit means unordered.
public enum DCEPChannelType: UInt8, Sendable {
    case reliable = 0x00
    case reliableUnordered = 0x80
    case partialReliableRexmit = 0x01
    case partialReliableRexmitUnordered = 0x81
    case partialReliableTimed = 0x02
    case partialReliableTimedUnordered = 0x82

    public var ordered: Bool { rawValue & 0x80 == 0 }
}

/// DATA_CHANNEL_OPEN (RFC 8832 §5.1).
public struct DataChannelOpen: Sendable, Equatable {
    public var channelType: DCEPChannelType
    public var priority: UInt16
    /// Retransmissions (rexmit types) or milliseconds (timed types); ignored for reliable ones.
    public var reliabilityParameter: UInt32
    public var label: String
    public var `protocol`: String

    public init(channelType: DCEPChannelType, priority: UInt16 = 256, reliabilityParameter: UInt32 = 0,
                label: String, protocol: String = "") {
        self.channelType = channelType
        self.priority = priority
        self.reliabilityParameter = reliabilityParameter
        self.label = label
        self.protocol = `protocol`
    }

    static let headerSize = 12

    public init(parsing b: [UInt8]) throws(SCTPError) {
        guard b.count >= Self.headerSize else {
            throw SCTPError("DCEP: DATA_CHANNEL_OPEN is \(b.count) bytes, shorter than its 12-byte header")
        }
        guard b[0] == DCEPMessage.openType else { throw SCTPError("DCEP: not a DATA_CHANNEL_OPEN (type \(b[0]))") }
        guard let type = DCEPChannelType(rawValue: b[1]) else {
            throw SCTPError("DCEP: unknown channel type 0x\(String(b[1], radix: 16))")
        }
        let labelLength = Int(b[8]) << 8 | Int(b[9])
        let protocolLength = Int(b[10]) << 8 | Int(b[11])
        guard b.count >= Self.headerSize + labelLength + protocolLength else {
            throw SCTPError("DCEP: DATA_CHANNEL_OPEN says label \(labelLength) + protocol \(protocolLength) bytes but carries \(b.count - Self.headerSize)")
        }
        let labelBytes = b[Self.headerSize..<(Self.headerSize + labelLength)]
        let protocolBytes = b[(Self.headerSize + labelLength)..<(Self.headerSize + labelLength + protocolLength)]
        guard let label = String(validating: labelBytes, as: UTF8.self) else { throw SCTPError("DCEP: the label is not UTF-8") }
        guard let proto = String(validating: protocolBytes, as: UTF8.self) else { throw SCTPError("DCEP: the protocol is not UTF-8") }
        self.channelType = type
        self.priority = UInt16(b[2]) << 8 | UInt16(b[3])
        self.reliabilityParameter = UInt32(b[4]) << 24 | UInt32(b[5]) << 16 | UInt32(b[6]) << 8 | UInt32(b[7])
        self.label = label
        self.protocol = proto
    }

    public var bytes: [UInt8] {
        let label = Array(label.utf8.prefix(65535)), proto = Array(`protocol`.utf8.prefix(65535))
        var b: [UInt8] = [DCEPMessage.openType, channelType.rawValue, UInt8(priority >> 8), UInt8(priority & 0xff)]
        b += [UInt8(reliabilityParameter >> 24), UInt8((reliabilityParameter >> 16) & 0xff),
              UInt8((reliabilityParameter >> 8) & 0xff), UInt8(reliabilityParameter & 0xff)]
        b += [UInt8(label.count >> 8), UInt8(label.count & 0xff), UInt8(proto.count >> 8), UInt8(proto.count & 0xff)]
        return b + label + proto
    }
}

/// RFC 8831 §8 payload protocol identifiers.
public enum PPID {
    public static let dcep: UInt32 = 50
    public static let string: UInt32 = 51
    public static let binary: UInt32 = 53
    public static let emptyString: UInt32 = 56
    public static let emptyBinary: UInt32 = 57
}
