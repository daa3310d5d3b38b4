/// SRTP/SRTCP for one DTLS-SRTP association: protects outbound packets with the local keys and
/// unprotects inbound packets with the remote keys, for any number of SSRCs in each direction.
///
/// Not thread-safe: every call updates rollover counters, replay windows and counters, and reuses
/// the session's cipher contexts and scratch buffers. It is `@unchecked Sendable` so it can be
/// handed to (and owned by) the one serial executor or thread that runs the connection; callers
/// must not use it from two threads at once.
public final class SRTPSession: @unchecked Sendable {
    /// The OpenSSL engine unretained (`engine` owns it): protecting a packet then bumps no
    /// reference count. At a relay's fan-out each player's session is cold, and an atomic
    /// increment on a cold line stalls the loop where plain loads would overlap. First, with
    /// the counters: what protecting touches of this object is one cache line.
    private let openssl: Unmanaged<OpenSSLSRTP>?
    public private(set) var stats = SRTPStats()
    public let profile: SRTPProfile
    public let backend: SRTPBackend

    private enum Engine {
        case openssl(OpenSSLSRTP)
        case libsrtp(LibSRTPContext)
    }
    private let engine: Engine

    public init(profile: SRTPProfile, localKey: [UInt8], localSalt: [UInt8], remoteKey: [UInt8], remoteSalt: [UInt8],
                backend: SRTPBackend = .openssl) throws(SRTPError) {
        for (name, key) in [("local key", localKey), ("remote key", remoteKey)] where key.count != profile.keyLength {
            throw SRTPError(.internalError("\(name) is \(key.count) bytes, \(profile) needs \(profile.keyLength)"))
        }
        for (name, salt) in [("local salt", localSalt), ("remote salt", remoteSalt)] where salt.count != profile.saltLength {
            throw SRTPError(.internalError("\(name) is \(salt.count) bytes, \(profile) needs \(profile.saltLength)"))
        }
        self.profile = profile
        self.backend = backend
        switch backend {
        case .openssl:
            let e = try OpenSSLSRTP(profile: profile, localKey: localKey, localSalt: localSalt,
                                    remoteKey: remoteKey, remoteSalt: remoteSalt)
            engine = .openssl(e)
            openssl = .passUnretained(e)
        case .libsrtp:
            engine = .libsrtp(try LibSRTPContext(profile: profile, localKey: localKey, localSalt: localSalt,
                                                 remoteKey: remoteKey, remoteSalt: remoteSalt))
            openssl = nil
        }
    }

    /// Builds a session from DTLS-SRTP keying material (RFC 5764 §4.2): client key, server key,
    /// client salt, server salt. `isClient` says which half is ours.
    public convenience init(profile: SRTPProfile, keyingMaterial: [UInt8], isClient: Bool,
                            backend: SRTPBackend = .openssl) throws(SRTPError) {
        let k = profile.keyLength
        let s = profile.saltLength
        guard keyingMaterial.count == 2 * (k + s) else {
            throw SRTPError(.internalError("keying material is \(keyingMaterial.count) bytes, \(profile) needs \(2 * (k + s))"))
        }
        let clientKey = Array(keyingMaterial[0..<k])
        let serverKey = Array(keyingMaterial[k..<2 * k])
        let clientSalt = Array(keyingMaterial[2 * k..<2 * k + s])
        let serverSalt = Array(keyingMaterial[2 * k + s..<2 * (k + s)])
        try self.init(profile: profile,
                      localKey: isClient ? clientKey : serverKey, localSalt: isClient ? clientSalt : serverSalt,
                      remoteKey: isClient ? serverKey : clientKey, remoteSalt: isClient ? serverSalt : clientSalt,
                      backend: backend)
    }

    // MARK: In place (hot path)

    /// The memory `protectRTP` uses beyond this object — the OpenSSL engine and its outbound
    /// RTP cipher context — for a caller that prefetches it ahead of use (the relay's fan-out
    /// loop, where every player's session is cold). nil with libsrtp.
    public var protectWorkingSet: (engine: UnsafeRawPointer, cipher: UnsafeRawPointer)? {
        guard let openssl else { return nil }
        return (UnsafeRawPointer(openssl.toOpaque()), UnsafeRawPointer(openssl._withUnsafeGuaranteedRef { $0.rtpOutCipher }))
    }

    /// Protects the RTP packet in the first `length` bytes of `buffer`, which must have
    /// `profile.rtpOverhead` more bytes of room. Returns the SRTP packet's length.
    public func protectRTP(in buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        let base = try Self.base(buffer, length)
        let n: Int
        if let openssl {
            let result = openssl._withUnsafeGuaranteedRef { e -> Result<Int, SRTPError> in
                do throws(SRTPError) { return .success(try e.protectRTP(base, length: length, capacity: buffer.count)) } catch { return .failure(error) }
            }
            n = try result.get()
        } else if case .libsrtp(let e) = engine {
            n = try e.protectRTP(base, length: length, capacity: buffer.count)
        } else {
            preconditionFailure("an OpenSSL engine without its unretained reference")
        }
        stats.protected &+= 1
        return n
    }

    /// Verifies and decrypts the SRTP packet in the first `length` bytes of `buffer`; returns the
    /// RTP packet's length. On failure the packet's payload is left as it was (openssl backend).
    public func unprotectRTP(in buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        let base = try Self.base(buffer, length)
        do {
            switch engine {
            case .openssl(let e): let n = try e.unprotectRTP(base, length: length); stats.unprotected &+= 1; return n
            case .libsrtp(let e): let n = try e.unprotectRTP(base, length: length); stats.unprotected &+= 1; return n
            }
        } catch {
            count(error)
            throw error
        }
    }

    /// Protects the RTCP compound packet in the first `length` bytes of `buffer`, which must have
    /// `profile.rtcpOverhead` more bytes of room. Returns the SRTCP packet's length.
    public func protectRTCP(in buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        let base = try Self.base(buffer, length)
        let n: Int
        switch engine {
        case .openssl(let e): n = try e.protectRTCP(base, length: length, capacity: buffer.count)
        case .libsrtp(let e): n = try e.protectRTCP(base, length: length, capacity: buffer.count)
        }
        stats.protected &+= 1
        return n
    }

    /// Verifies and decrypts the SRTCP packet in the first `length` bytes of `buffer`; returns the
    /// RTCP packet's length.
    public func unprotectRTCP(in buffer: UnsafeMutableRawBufferPointer, length: Int) throws(SRTPError) -> Int {
        let base = try Self.base(buffer, length)
        do {
            switch engine {
            case .openssl(let e): let n = try e.unprotectRTCP(base, length: length); stats.unprotected &+= 1; return n
            case .libsrtp(let e): let n = try e.unprotectRTCP(base, length: length); stats.unprotected &+= 1; return n
            }
        } catch {
            count(error)
            throw error
        }
    }

    // MARK: Arrays

    public func protectRTP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, extra: profile.rtpOverhead) { (b, n) throws(SRTPError) in try protectRTP(in: b, length: n) }
    }

    public func unprotectRTP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, extra: 0) { (b, n) throws(SRTPError) in try unprotectRTP(in: b, length: n) }
    }

    public func protectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, extra: profile.rtcpOverhead) { (b, n) throws(SRTPError) in try protectRTCP(in: b, length: n) }
    }

    public func unprotectRTCP(_ packet: [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, extra: 0) { (b, n) throws(SRTPError) in try unprotectRTCP(in: b, length: n) }
    }

    // MARK: Helpers

    private func transform(_ packet: [UInt8], extra: Int,
                           _ body: (UnsafeMutableRawBufferPointer, Int) throws(SRTPError) -> Int) throws(SRTPError) -> [UInt8] {
        var out = packet
        out.append(contentsOf: repeatElement(0, count: extra))
        let result: Result<Int, SRTPError> = out.withUnsafeMutableBytes { buffer in
            do throws(SRTPError) { return .success(try body(buffer, packet.count)) } catch { return .failure(error) }
        }
        let n = try result.get()
        out.removeSubrange(n...)
        return out
    }

    private static func base(_ buffer: UnsafeMutableRawBufferPointer, _ length: Int) throws(SRTPError) -> UnsafeMutableRawPointer {
        guard length >= 0, length <= buffer.count else {
            throw SRTPError(.internalError("length \(length) outside a buffer of \(buffer.count) bytes"))
        }
        // The C APIs count in Int32; no RTP packet comes near this.
        guard length <= Self.maxPacketLength else {
            throw SRTPError(.internalError("length \(length) exceeds the \(Self.maxPacketLength)-byte packet limit"))
        }
        guard let base = buffer.baseAddress else { throw SRTPError(.tooShort, "empty packet") }
        return base
    }

    private static let maxPacketLength = 1 << 20

    private func count(_ error: SRTPError) {
        switch error.kind {
        case .authenticationFailed: stats.authFailures &+= 1
        case .replay: stats.replays &+= 1
        default: break
        }
    }
}
