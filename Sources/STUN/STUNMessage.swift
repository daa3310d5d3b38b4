/// A STUN method (12 bits): Binding for ICE, the TURN methods of RFC 8656; others are kept as raw values.
public struct STUNMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue & 0x0FFF }
    public static let binding = STUNMethod(rawValue: 0x001)
    public static let allocate = STUNMethod(rawValue: 0x003)
    public static let refresh = STUNMethod(rawValue: 0x004)
    public static let send = STUNMethod(rawValue: 0x006)
    public static let data = STUNMethod(rawValue: 0x007)
    public static let createPermission = STUNMethod(rawValue: 0x008)
    public static let channelBind = STUNMethod(rawValue: 0x009)

    public var description: String {
        switch rawValue {
        case 0x001: return "Binding"
        case 0x003: return "Allocate"
        case 0x004: return "Refresh"
        case 0x006: return "Send"
        case 0x007: return "Data"
        case 0x008: return "CreatePermission"
        case 0x009: return "ChannelBind"
        default: return "method 0x\(String(rawValue, radix: 16))"
        }
    }
}

public enum STUNClass: UInt8, Sendable, Hashable {
    case request = 0b00
    case indication = 0b01
    case successResponse = 0b10
    case errorResponse = 0b11
}

/// A STUN message (RFC 8489): header plus attributes, as a value.
public struct STUNMessage: Sendable, Equatable {
    public static let magicCookie: UInt32 = 0x2112_A442
    static let fingerprintXor: UInt32 = 0x5354_554E
    static let headerSize = 20

    public var method: STUNMethod
    public var messageClass: STUNClass
    /// 12 bytes. `encode` pads or truncates other lengths rather than trapping.
    public var transactionID: [UInt8]
    public var attributes: [STUNAttribute]

    public init(method: STUNMethod = .binding, messageClass: STUNClass, transactionID: [UInt8] = STUNMessage.randomTransactionID(), attributes: [STUNAttribute] = []) {
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
    }

    public static func randomTransactionID() -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<12).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// Cheap demultiplexing test (RFC 7983 plus the cookie): could these bytes be STUN?
    public static func isSTUN(_ bytes: [UInt8]) -> Bool {
        bytes.count >= headerSize && bytes[0] & 0xC0 == 0
            && bytes[4] == 0x21 && bytes[5] == 0x12 && bytes[6] == 0xA4 && bytes[7] == 0x42
    }

    /// The same test on a received buffer, for a driver's demultiplexing hot path.
    public static func isSTUN(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= headerSize && bytes[0] & 0xC0 == 0
            && bytes[4] == 0x21 && bytes[5] == 0x12 && bytes[6] == 0xA4 && bytes[7] == 0x42
    }

    /// Whether a STUN-looking buffer is a Binding message (any class): the method bits of the
    /// type field. A TURN server that is also the STUN server answers both on one socket.
    public static func isBinding(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard isSTUN(bytes) else { return false }
        let type = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        return type & 0x3EEF == STUNMethod.binding.rawValue
    }

    // MARK: parsing

    /// Parses and validates a whole datagram. Attributes after MESSAGE-INTEGRITY other than
    /// FINGERPRINT are ignored (RFC 8489 §14.5); anything after FINGERPRINT is an error.
    public init(parsing bytes: [UInt8]) throws(STUNError) {
        guard bytes.count >= Self.headerSize else {
            throw STUNError(.truncated, offset: bytes.count, "datagram of \(bytes.count) bytes is shorter than the 20-byte header")
        }
        guard bytes[0] & 0xC0 == 0 else {
            throw STUNError(.notSTUN, offset: 0, "first two bits are not zero (first byte 0x\(String(bytes[0], radix: 16)))")
        }
        let cookie = UInt32(bigEndianBytes: bytes[4..<8])
        guard cookie == Self.magicCookie else {
            throw STUNError(.notSTUN, offset: 4, "magic cookie is 0x\(String(cookie, radix: 16)), not 0x2112a442")
        }
        let length = Int(UInt16(bigEndianBytes: bytes[2..<4]))
        guard length % 4 == 0 else {
            throw STUNError(.badLength, offset: 2, "message length \(length) is not a multiple of 4")
        }
        guard Self.headerSize + length == bytes.count else {
            throw STUNError(.badLength, offset: 2, "header says \(length) attribute bytes but \(bytes.count - Self.headerSize) follow")
        }
        let type = UInt16(bigEndianBytes: bytes[0..<2])
        let methodBits = (type & 0x000F) | ((type & 0x00E0) >> 1) | ((type & 0x3E00) >> 2)
        let classBits = UInt8(((type & 0x0010) >> 4) | ((type & 0x0100) >> 7))
        method = STUNMethod(rawValue: methodBits)
        messageClass = STUNClass(rawValue: classBits) ?? .request
        transactionID = Array(bytes[8..<20])
        attributes = []

        var offset = Self.headerSize
        var sawIntegrity = false
        var sawFingerprint = false
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else {
                throw STUNError(.truncated, offset: offset, "attribute header cut short")
            }
            let attrType = UInt16(bigEndianBytes: bytes[offset..<(offset + 2)])
            let attrLength = Int(UInt16(bigEndianBytes: bytes[(offset + 2)..<(offset + 4)]))
            let valueStart = offset + 4
            let padded = (attrLength + 3) & ~3
            guard valueStart + padded <= bytes.count else {
                throw STUNError(.truncated, offset: offset,
                                "attribute 0x\(String(attrType, radix: 16)) of length \(attrLength) (padded \(padded)) runs past the end (\(bytes.count - valueStart) bytes left)")
            }
            if sawFingerprint {
                throw STUNError(.misplacedAttribute, offset: offset, "attribute 0x\(String(attrType, radix: 16)) after FINGERPRINT")
            }
            let value = bytes[valueStart..<(valueStart + attrLength)]
            if !sawIntegrity || attrType == STUNAttribute.TypeCode.fingerprint {
                let attribute = try STUNAttribute.decode(type: attrType, value: value, offset: valueStart, transactionID: transactionID)
                attributes.append(attribute)
            }
            if attrType == STUNAttribute.TypeCode.messageIntegrity { sawIntegrity = true }
            if attrType == STUNAttribute.TypeCode.fingerprint { sawFingerprint = true }
            offset = valueStart + padded
        }
    }

    // MARK: encoding

    /// Encodes the message. MESSAGE-INTEGRITY (HMAC-SHA1 with `integrityKey`, the short-term
    /// password's bytes) and FINGERPRINT are computed here and appended last; such attributes in
    /// `attributes` are skipped.
    public func encode(integrityKey: [UInt8]? = nil, fingerprint: Bool = true) -> [UInt8] {
        encode(integrityKey: integrityKey, fingerprint: fingerprint, padding: 0)
    }

    /// `padding` is the byte used to fill attributes to 4-byte boundaries (RFC 5769's vectors use 0x20).
    func encode(integrityKey: [UInt8]?, fingerprint: Bool, padding: UInt8) -> [UInt8] {
        let id = STUNAttribute.paddedID(transactionID)
        let m = method.rawValue & 0x0FFF
        let c = UInt16(messageClass.rawValue)
        let type = (m & 0x000F) | ((m & 0x0070) << 1) | ((m & 0x0F80) << 2) | ((c & 1) << 4) | ((c & 2) << 7)

        var out: [UInt8] = []
        out.reserveCapacity(128)
        out += type.bigEndianBytes
        out += [0, 0]
        out += Self.magicCookie.bigEndianBytes
        out += id
        for attribute in attributes {
            switch attribute {
            case .messageIntegrity, .fingerprint: continue
            default: break
            }
            var value = attribute.encodeValue(transactionID: id)
            // Keep the total under the 16-bit length field.
            let room = 0xFFFF - 36 - (out.count - Self.headerSize) - 4
            guard room > 0 else { break }
            if value.count > room { value = Array(value.prefix(room & ~3)) }
            out += attribute.type.bigEndianBytes
            out += UInt16(value.count).bigEndianBytes
            out += value
            let pad = (4 - value.count % 4) % 4
            out += [UInt8](repeating: padding, count: pad)
        }
        if let integrityKey {
            Self.setLength(&out, out.count - Self.headerSize + 24)
            let mac = HMACSHA1.mac(key: integrityKey, data: out[...])
            out += STUNAttribute.TypeCode.messageIntegrity.bigEndianBytes
            out += UInt16(20).bigEndianBytes
            out += mac.count == 20 ? mac : [UInt8](repeating: 0, count: 20)
        }
        if fingerprint {
            Self.setLength(&out, out.count - Self.headerSize + 8)
            let crc = CRC32.checksum(out) ^ Self.fingerprintXor
            out += STUNAttribute.TypeCode.fingerprint.bigEndianBytes
            out += UInt16(4).bigEndianBytes
            out += crc.bigEndianBytes
        }
        Self.setLength(&out, out.count - Self.headerSize)
        return out
    }

    static func setLength(_ bytes: inout [UInt8], _ length: Int) {
        let value = UInt16(clamping: length)
        bytes[2] = UInt8(value >> 8)
        bytes[3] = UInt8(value & 0xff)
    }

    // MARK: verification on the raw datagram

    /// Offset of the first MESSAGE-INTEGRITY attribute header, walking the attributes safely.
    static func integrityOffset(_ raw: [UInt8]) -> Int? {
        guard raw.count >= headerSize else { return nil }
        var offset = headerSize
        while offset + 4 <= raw.count {
            let type = UInt16(bigEndianBytes: raw[offset..<(offset + 2)])
            let length = Int(UInt16(bigEndianBytes: raw[(offset + 2)..<(offset + 4)]))
            if type == STUNAttribute.TypeCode.messageIntegrity {
                return length == 20 && offset + 24 <= raw.count ? offset : nil
            }
            offset += 4 + ((length + 3) & ~3)
        }
        return nil
    }

    /// Checks MESSAGE-INTEGRITY (HMAC-SHA1) of a received datagram with the given key.
    public static func verifyIntegrity(_ raw: [UInt8], key: [UInt8]) -> Bool {
        guard let offset = integrityOffset(raw) else { return false }
        // The MAC covers the message up to MESSAGE-INTEGRITY, with the length field as if
        // MESSAGE-INTEGRITY were the last attribute.
        var covered = Array(raw[0..<offset])
        setLength(&covered, offset + 24 - headerSize)
        let expected = HMACSHA1.mac(key: key, data: covered[...])
        return HMACSHA1.equal(expected, raw[(offset + 4)..<(offset + 24)])
    }

    /// Checks that the datagram ends in a correct FINGERPRINT attribute.
    public static func verifyFingerprint(_ raw: [UInt8]) -> Bool {
        guard raw.count >= headerSize + 8 else { return false }
        let length = Int(UInt16(bigEndianBytes: raw[2..<4]))
        guard length + headerSize == raw.count else { return false }
        let start = raw.count - 8
        guard UInt16(bigEndianBytes: raw[start..<(start + 2)]) == STUNAttribute.TypeCode.fingerprint,
              UInt16(bigEndianBytes: raw[(start + 2)..<(start + 4)]) == 4 else { return false }
        let value = UInt32(bigEndianBytes: raw[(start + 4)..<(start + 8)])
        return CRC32.checksum(raw[0..<start]) ^ fingerprintXor == value
    }
}

// MARK: - convenience accessors (first occurrence wins)

extension STUNMessage {
    public var username: String? {
        for case .username(let v) in attributes { return v }
        return nil
    }
    public var software: String? {
        for case .software(let v) in attributes { return v }
        return nil
    }
    public var priority: UInt32? {
        for case .priority(let v) in attributes { return v }
        return nil
    }
    public var errorCode: (code: Int, reason: String)? {
        for case .errorCode(let code, let reason) in attributes { return (code, reason) }
        return nil
    }
    public var xorMappedAddress: SocketAddress? {
        for case .xorMappedAddress(let v) in attributes { return v }
        return nil
    }
    public var mappedAddress: SocketAddress? {
        for case .mappedAddress(let v) in attributes { return v }
        return nil
    }
    public var iceControlling: UInt64? {
        for case .iceControlling(let v) in attributes { return v }
        return nil
    }
    public var iceControlled: UInt64? {
        for case .iceControlled(let v) in attributes { return v }
        return nil
    }
    public var useCandidate: Bool {
        attributes.contains(.useCandidate)
    }
    public var messageIntegrity: [UInt8]? {
        for case .messageIntegrity(let v) in attributes { return v }
        return nil
    }
    public var fingerprint: UInt32? {
        for case .fingerprint(let v) in attributes { return v }
        return nil
    }
    public var realm: String? {
        for case .realm(let v) in attributes { return v }
        return nil
    }
    public var nonce: String? {
        for case .nonce(let v) in attributes { return v }
        return nil
    }
    public var lifetime: UInt32? {
        for case .lifetime(let v) in attributes { return v }
        return nil
    }
    public var xorPeerAddress: SocketAddress? {
        for case .xorPeerAddress(let v) in attributes { return v }
        return nil
    }
    public var xorRelayedAddress: SocketAddress? {
        for case .xorRelayedAddress(let v) in attributes { return v }
        return nil
    }
    public var channelNumber: UInt16? {
        for case .channelNumber(let v) in attributes { return v }
        return nil
    }
    public var data: [UInt8]? {
        for case .data(let v) in attributes { return v }
        return nil
    }
    /// Comprehension-required attribute types (< 0x8000) this parser does not know (for a 420 reply).
    public var unknownComprehensionRequired: [UInt16] {
        attributes.compactMap {
            if case .unknown(let type, _) = $0, type < 0x8000 { return type }
            return nil
        }
    }
}
