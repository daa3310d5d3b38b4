import COpenSSL

/// Session keys and EVP contexts for one direction (outbound or inbound) of RTP or RTCP.
///
/// A struct, kept inline in `OpenSSLSRTP`: the salt words and raw contexts sit in the engine's
/// own object, so protecting a packet touches no memory of ours beyond it and the stream's
/// index — at a relay's fan-out every player's engine is cold, and each extra object (key
/// owner, salt, IV scratch, cipher owner) was another cache miss per player per packet.
struct OpenSSLKeys: ~Copyable {
    /// Session salt as two big-endian words (zero-padded to 16 bytes), XORed into every IV.
    let salt: (UInt64, UInt64)
    /// AES-128-CTR (AES-CM) or AES-128-GCM context.
    let cipher: OpaquePointer
    /// HMAC-SHA1 key state (AES-CM only).
    let macKey: UnsafeMutablePointer<swiftrtc_hmac_sha1_key>?

    /// Derives the session keys of RTP or RTCP from a master key and salt (RFC 3711 §4.3).
    init(profile: SRTPProfile, masterKey: [UInt8], masterSalt: [UInt8], rtcp: Bool, encrypting: Bool) throws(SRTPError) {
        let encLabel: KeyDerivation.Label = rtcp ? .rtcpEncryption : .rtpEncryption
        let authLabel: KeyDerivation.Label = rtcp ? .rtcpAuthentication : .rtpAuthentication
        let saltLabel: KeyDerivation.Label = rtcp ? .rtcpSalt : .rtpSalt
        let encKey = try KeyDerivation.derive(masterKey: masterKey, masterSalt: masterSalt, label: encLabel, length: 16)
        let sessionSalt = try KeyDerivation.derive(masterKey: masterKey, masterSalt: masterSalt, label: saltLabel,
                                                   length: profile.saltLength)
        let authKey = profile == .aes128CmHmacSha1_80
            ? try KeyDerivation.derive(masterKey: masterKey, masterSalt: masterSalt, label: authLabel, length: 20) : []
        try self.init(profile: profile, sessionKey: encKey, sessionSalt: sessionSalt, authKey: authKey, encrypting: encrypting)
    }

    /// Uses session keys as given (RFC 7714's test vectors are stated this way).
    init(profile: SRTPProfile, sessionKey: [UInt8], sessionSalt: [UInt8], authKey: [UInt8], encrypting: Bool) throws(SRTPError) {
        guard sessionSalt.count == profile.saltLength else {
            throw SRTPError(.internalError("session salt is \(sessionSalt.count) bytes, expected \(profile.saltLength)"))
        }
        var padded = [UInt8](repeating: 0, count: 16)
        padded.replaceSubrange(0..<sessionSalt.count, with: sessionSalt)
        func word(_ at: Int) -> UInt64 { padded[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        let salt = (word(0), word(8))
        switch profile {
        case .aes128CmHmacSha1_80:
            let ctx = try AESCounterMode.context(key: sessionKey)
            let mac: UnsafeMutablePointer<swiftrtc_hmac_sha1_key>
            do { mac = try HMACSHA1.key(authKey) } catch {
                EVP_CIPHER_CTX_free(ctx)
                throw error
            }
            (self.salt, cipher, macKey) = (salt, ctx, mac)
        case .aeadAes128Gcm:
            (self.salt, cipher, macKey) = (salt, try AESGCM.context(key: sessionKey, encrypting: encrypting), nil)
        }
    }

    deinit {
        EVP_CIPHER_CTX_free(cipher)
        if let macKey { HMACSHA1.free(macKey) }
    }

    /// AES-CM IV (RFC 3711 §4.1.1): salt·2^16 XOR SSRC·2^64 XOR index·2^16, as big-endian words.
    @inline(__always)
    func counterIV(ssrc: UInt32, index: UInt64) -> (UInt64, UInt64) {
        ((salt.0 ^ UInt64(ssrc)).bigEndian, (salt.1 ^ (index << 16)).bigEndian)
    }

    /// GCM IV (RFC 7714 §8.1, §9.1): 00 00 | SSRC | middle (4 bytes) | low (2 bytes), XOR salt;
    /// the first 12 bytes of the two words. For SRTP middle|low = ROC|SEQ; for SRTCP = 00 00 |
    /// 31-bit SRTCP index.
    @inline(__always)
    func gcmIV(ssrc: UInt32, low48: UInt64) -> (UInt64, UInt64) {
        ((salt.0 ^ UInt64(ssrc) << 16 ^ (low48 >> 32) & 0xFFFF).bigEndian,
         (salt.1 ^ (low48 & 0xFFFF_FFFF) << 32).bigEndian)
    }
}

/// Per-SSRC state of a stream we send.
struct OutboundStream {
    var rtp = RTPIndexTracker()
    /// Last SRTCP index sent (libsrtp starts at 0 and increments before use, so the first is 1).
    var rtcpIndex: UInt32 = 0
}

/// The streams we send, by SSRC: the first two (a relay player's audio and video) by value in
/// the engine's own object — no box to miss in cache and no reference count to bump per
/// packet — any more in a table. Our own SSRCs only, so the table cannot be grown from outside.
struct OutboundStreams {
    private var ssrcs: (UInt32, UInt32) = (0, 0)
    private var used = (false, false)
    private var inline = (OutboundStream(), OutboundStream())
    private var more: [UInt32: OutboundStream] = [:]

    @inline(__always)
    mutating func with<R>(_ ssrc: UInt32, _ body: (inout OutboundStream) -> R) -> R {
        if used.0, ssrcs.0 == ssrc { return body(&inline.0) }
        if used.1, ssrcs.1 == ssrc { return body(&inline.1) }
        if !used.0 { (used.0, ssrcs.0) = (true, ssrc); return body(&inline.0) }
        if !used.1 { (used.1, ssrcs.1) = (true, ssrc); return body(&inline.1) }
        return body(&more[ssrc, default: OutboundStream()])
    }
}

/// Per-SSRC state of a stream we receive: indices and replay lists.
final class InboundStream {
    var rtp = RTPReplayList()
    var rtcpReplay = RTCPReplayWindow()
}

/// Our SRTP/SRTCP implementation (RFC 3711, RFC 7714) on OpenSSL EVP. Packets are transformed in
/// place; every buffer it needs per packet is allocated once here or on the stack.
final class OpenSSLSRTP {
    // The outbound RTP path's state first: one or two cache lines of this object.
    private var outbound = OutboundStreams()
    private let rtpOut: OpenSSLKeys
    let profile: SRTPProfile
    let tagLength: Int
    private let rtcpOut: OpenSSLKeys
    private let rtpIn: OpenSSLKeys
    private let rtcpIn: OpenSSLKeys

    private var inbound: [UInt32: InboundStream] = [:]
    private var lastIn: (ssrc: UInt32, state: InboundStream)?

    /// GCM decrypts here first so a forged packet never changes the caller's buffer.
    private var plain: UnsafeMutableRawPointer
    private var plainCapacity: Int

    convenience init(profile: SRTPProfile, localKey: [UInt8], localSalt: [UInt8], remoteKey: [UInt8], remoteSalt: [UInt8]) throws(SRTPError) {
        try self.init(
            profile: profile,
            rtpOut: OpenSSLKeys(profile: profile, masterKey: localKey, masterSalt: localSalt, rtcp: false, encrypting: true),
            rtcpOut: OpenSSLKeys(profile: profile, masterKey: localKey, masterSalt: localSalt, rtcp: true, encrypting: true),
            rtpIn: OpenSSLKeys(profile: profile, masterKey: remoteKey, masterSalt: remoteSalt, rtcp: false, encrypting: false),
            rtcpIn: OpenSSLKeys(profile: profile, masterKey: remoteKey, masterSalt: remoteSalt, rtcp: true, encrypting: false))
    }

    init(profile: SRTPProfile, rtpOut: consuming OpenSSLKeys, rtcpOut: consuming OpenSSLKeys,
         rtpIn: consuming OpenSSLKeys, rtcpIn: consuming OpenSSLKeys) {
        self.profile = profile
        tagLength = profile.tagLength
        self.rtpOut = rtpOut
        self.rtcpOut = rtcpOut
        self.rtpIn = rtpIn
        self.rtcpIn = rtcpIn
        plainCapacity = profile == .aeadAes128Gcm ? 2048 : 0
        plain = .allocate(byteCount: max(plainCapacity, 1), alignment: 16)
    }

    /// The outbound RTP cipher context (see `SRTPSession.protectWorkingSet`).
    var rtpOutCipher: OpaquePointer { rtpOut.cipher }

    /// Test hook: makes the next SRTCP packet of `ssrc` carry index `last + 1`.
    func setLastRTCPIndex(_ last: UInt32, ssrc: UInt32) {
        outbound.with(ssrc) { $0.rtcpIndex = last }
    }

    deinit { plain.deallocate() }

    // MARK: Streams

    /// Inbound streams are only remembered once a packet of theirs authenticates, so forged
    /// SSRCs cannot grow the table.
    @inline(__always)
    private func inboundStream(_ ssrc: UInt32) -> (InboundStream, isNew: Bool) {
        if let last = lastIn, last.ssrc == ssrc { return (last.state, false) }
        if let s = inbound[ssrc] { lastIn = (ssrc, s); return (s, false) }
        return (InboundStream(), true)
    }

    @inline(__always)
    private func remember(_ ssrc: UInt32, _ state: InboundStream) {
        inbound[ssrc] = state
        lastIn = (ssrc, state)
    }

    private func ensurePlainCapacity(_ n: Int) {
        guard n > plainCapacity else { return }
        plain.deallocate()
        plainCapacity = max(n, plainCapacity * 2)
        plain = .allocate(byteCount: plainCapacity, alignment: 16)
    }

    private static let cryptoFailure = SRTPError(.internalError("OpenSSL EVP operation failed"))

    // MARK: Per-packet scratch, on the stack (no cache line of its own)

    @inline(__always)
    private static func withIV<R>(_ iv: (UInt64, UInt64), _ body: (UnsafePointer<UInt8>) -> R) -> R {
        var v = iv
        return withUnsafeBytes(of: &v) { body($0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
    }

    /// A 4-byte big-endian word (ROC or SRTCP trailer) as bytes.
    @inline(__always)
    private static func withWord<R>(_ value: UInt32, _ body: (UnsafePointer<UInt8>) -> R) -> R {
        var v = value.bigEndian
        return withUnsafeBytes(of: &v) { body($0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
    }

    /// HMAC-SHA1 of `count` bytes at `data`, then the big-endian `suffix` if any; `body` gets the
    /// 20-byte MAC. False when the MAC could not be computed.
    @inline(__always)
    private static func withHMAC(_ key: UnsafeMutablePointer<swiftrtc_hmac_sha1_key>, _ data: UnsafeRawPointer, count: Int,
                                 suffix: UInt32?, _ body: (UnsafePointer<UInt8>) -> Bool) -> Bool {
        var mac: (UInt64, UInt64, UInt32) = (0, 0, 0)
        return withWord(suffix ?? 0) { word in
            withUnsafeMutableBytes(of: &mac) { m in
                let out = m.baseAddress!.assumingMemoryBound(to: UInt8.self)
                guard HMACSHA1.compute(key, data, count: count, suffix: word, suffixCount: suffix == nil ? 0 : 4, into: out)
                else { return false }
                return body(out)
            }
        }
    }

    // MARK: SRTP

    func protectRTP(_ base: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        let header = try PacketLayout.rtpHeaderLength(base, available: length, packetLength: length)
        guard capacity >= length + tagLength else {
            throw SRTPError(.internalError("buffer holds \(capacity) bytes, protecting \(length) needs \(length + tagLength)"))
        }
        let seq = PacketLayout.load16(base, 2)
        let ssrc = PacketLayout.load32(base, 8)
        // Same seq twice is a NACK re-send (libsrtp's allow_repeat_tx); older than the window is refused.
        let (index, tooOld) = outbound.with(ssrc) { stream in
            let (index, delta) = stream.rtp.estimate(seq)
            if RTPIndexTracker.isTooOld(delta) { return (index, true) }
            stream.rtp.advance(index: index, delta: delta)
            return (index, false)
        }
        if tooOld {
            throw SRTPError(.replay, "outbound SSRC \(ssrc) seq \(seq) is older than the \(replayWindowSize)-packet window")
        }

        let payload = base + header
        let payloadLength = length - header
        let cipher = rtpOut.cipher
        let ok: Bool
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let macKey = rtpOut.macKey else { throw Self.cryptoFailure }
            let tag = tagLength
            ok = Self.withIV(rtpOut.counterIV(ssrc: ssrc, index: index)) {
                AESCounterMode.apply(cipher, iv: $0, data: payload, count: payloadLength)
            } && Self.withHMAC(macKey, base, count: length, suffix: UInt32(truncatingIfNeeded: index >> 16)) {
                (base + length).copyMemory(from: $0, byteCount: tag)
                return true
            }
        case .aeadAes128Gcm:
            ok = Self.withIV(rtpOut.gcmIV(ssrc: ssrc, low48: index)) {
                AESGCM.seal(cipher, iv: $0, aad: base, aadCount: header, aad2: nil, aad2Count: 0,
                            data: payload, count: payloadLength, tag: base + length)
            }
        }
        guard ok else { throw Self.cryptoFailure }
        return length + tagLength
    }

    func unprotectRTP(_ base: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        guard length >= PacketLayout.rtpFixedHeader + tagLength else {
            throw SRTPError(.tooShort, "\(length) bytes, SRTP needs at least \(PacketLayout.rtpFixedHeader + tagLength)")
        }
        let end = length - tagLength
        let header = try PacketLayout.rtpHeaderLength(base, available: end, packetLength: length)
        let seq = PacketLayout.load16(base, 2)
        let ssrc = PacketLayout.load32(base, 8)
        let (stream, isNew) = inboundStream(ssrc)
        let (index, delta) = stream.rtp.estimate(seq)
        switch stream.rtp.check(delta) {
        case .fresh: break
        case .repeated: throw SRTPError(.replay, "SSRC \(ssrc) seq \(seq) (index \(index)) already received")
        case .tooOld: throw SRTPError(.replay, "SSRC \(ssrc) seq \(seq) is older than the \(replayWindowSize)-packet window")
        }

        let payload = base + header
        let payloadLength = end - header
        let cipher = rtpIn.cipher
        let tag = tagLength
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let macKey = rtpIn.macKey else { throw Self.cryptoFailure }
            var matches = false
            guard Self.withHMAC(macKey, base, count: end, suffix: UInt32(truncatingIfNeeded: index >> 16), {
                matches = constantTimeEqual($0, base + end, count: tag)
                return true
            }) else { throw Self.cryptoFailure }
            guard matches else {
                throw SRTPError(.authenticationFailed, "SSRC \(ssrc) seq \(seq): HMAC-SHA1 tag at offset \(end) does not match")
            }
            guard Self.withIV(rtpIn.counterIV(ssrc: ssrc, index: index), {
                AESCounterMode.apply(cipher, iv: $0, data: payload, count: payloadLength)
            }) else { throw Self.cryptoFailure }
        case .aeadAes128Gcm:
            ensurePlainCapacity(payloadLength)
            let plain = plain
            guard Self.withIV(rtpIn.gcmIV(ssrc: ssrc, low48: index), {
                AESGCM.open(cipher, iv: $0, aad: base, aadCount: header, aad2: nil, aad2Count: 0,
                            input: payload, output: plain, count: payloadLength, tag: base + end)
            }) else {
                throw SRTPError(.authenticationFailed, "SSRC \(ssrc) seq \(seq): GCM tag at offset \(end) does not match")
            }
            payload.copyMemory(from: plain, byteCount: payloadLength)
        }
        stream.rtp.add(index: index, delta: delta)
        if isNew { remember(ssrc, stream) }
        return end
    }

    // MARK: SRTCP

    func protectRTCP(_ base: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        try PacketLayout.checkRTCPHeader(base, available: length, packetLength: length)
        let overhead = tagLength + 4
        guard capacity >= length + overhead else {
            throw SRTPError(.internalError("buffer holds \(capacity) bytes, protecting RTCP of \(length) needs \(length + overhead)"))
        }
        let ssrc = PacketLayout.load32(base, 4)
        let next: UInt32? = outbound.with(ssrc) { stream in
            guard stream.rtcpIndex < 0x7FFF_FFFF else { return nil }
            stream.rtcpIndex += 1
            return stream.rtcpIndex
        }
        guard let index = next else {
            throw SRTPError(.internalError("SRTCP index space of SSRC \(ssrc) exhausted; re-key"))
        }
        let trailer = 0x8000_0000 | index  // E flag: encrypted
        let payload = base + PacketLayout.rtcpFixedHeader
        let payloadLength = length - PacketLayout.rtcpFixedHeader
        let cipher = rtcpOut.cipher
        let tag = tagLength
        let ok: Bool
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let macKey = rtcpOut.macKey else { throw Self.cryptoFailure }
            ok = Self.withIV(rtcpOut.counterIV(ssrc: ssrc, index: UInt64(index))) {
                AESCounterMode.apply(cipher, iv: $0, data: payload, count: payloadLength)
            } && {
                PacketLayout.store32(base, length, trailer)
                return Self.withHMAC(macKey, base, count: length + 4, suffix: nil) {
                    (base + length + 4).copyMemory(from: $0, byteCount: tag)
                    return true
                }
            }()
        case .aeadAes128Gcm:
            ok = Self.withIV(rtcpOut.gcmIV(ssrc: ssrc, low48: UInt64(index))) { iv in
                Self.withWord(trailer) { word in
                    AESGCM.seal(cipher, iv: iv, aad: base, aadCount: PacketLayout.rtcpFixedHeader, aad2: word, aad2Count: 4,
                                data: payload, count: payloadLength, tag: base + length)
                }
            }
            if ok { PacketLayout.store32(base, length + tagLength, trailer) }
        }
        guard ok else { throw Self.cryptoFailure }
        return length + overhead
    }

    func unprotectRTCP(_ base: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        let minimum = PacketLayout.rtcpFixedHeader + 4 + tagLength
        guard length >= minimum else {
            throw SRTPError(.tooShort, "\(length) bytes, SRTCP needs at least \(minimum)")
        }
        // AES-CM: header | payload | E+index | tag.  GCM: header | payload | tag | E+index.
        let trailerOffset: Int
        let tagOffset: Int
        let plainEnd: Int
        switch profile {
        case .aes128CmHmacSha1_80:
            trailerOffset = length - tagLength - 4
            tagOffset = length - tagLength
            plainEnd = trailerOffset
        case .aeadAes128Gcm:
            trailerOffset = length - 4
            tagOffset = length - 4 - tagLength
            plainEnd = tagOffset
        }
        try PacketLayout.checkRTCPHeader(base, available: plainEnd, packetLength: length)
        let trailer = PacketLayout.load32(base, trailerOffset)
        let encrypted = trailer & 0x8000_0000 != 0
        let index = trailer & 0x7FFF_FFFF
        let ssrc = PacketLayout.load32(base, 4)
        let (stream, isNew) = inboundStream(ssrc)
        switch stream.rtcpReplay.check(index) {
        case .fresh: break
        case .repeated: throw SRTPError(.replay, "SRTCP SSRC \(ssrc) index \(index) already received")
        case .tooOld: throw SRTPError(.replay, "SRTCP SSRC \(ssrc) index \(index) is older than the replay window")
        }
        let payload = base + PacketLayout.rtcpFixedHeader
        let payloadLength = plainEnd - PacketLayout.rtcpFixedHeader
        let cipher = rtcpIn.cipher
        let tag = tagLength
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let macKey = rtcpIn.macKey else { throw Self.cryptoFailure }
            var matches = false
            guard Self.withHMAC(macKey, base, count: tagOffset, suffix: nil, {
                matches = constantTimeEqual($0, base + tagOffset, count: tag)
                return true
            }) else { throw Self.cryptoFailure }
            guard matches else {
                throw SRTPError(.authenticationFailed, "SRTCP SSRC \(ssrc) index \(index): HMAC-SHA1 tag at offset \(tagOffset) does not match")
            }
            if encrypted {
                guard Self.withIV(rtcpIn.counterIV(ssrc: ssrc, index: UInt64(index)), {
                    AESCounterMode.apply(cipher, iv: $0, data: payload, count: payloadLength)
                }) else { throw Self.cryptoFailure }
            }
        case .aeadAes128Gcm:
            // Not encrypted: the whole packet is authenticated data.
            let (aadCount, count) = encrypted ? (PacketLayout.rtcpFixedHeader, payloadLength) : (plainEnd, 0)
            ensurePlainCapacity(count)
            let plain = plain
            let ok = Self.withIV(rtcpIn.gcmIV(ssrc: ssrc, low48: UInt64(index))) { iv in
                Self.withWord(trailer) { word in
                    AESGCM.open(cipher, iv: iv, aad: base, aadCount: aadCount, aad2: word, aad2Count: 4,
                                input: payload, output: plain, count: count, tag: base + tagOffset)
                }
            }
            guard ok else {
                throw SRTPError(.authenticationFailed, "SRTCP SSRC \(ssrc) index \(index): GCM tag at offset \(tagOffset) does not match")
            }
            if encrypted { payload.copyMemory(from: plain, byteCount: payloadLength) }
        }
        stream.rtcpReplay.add(index)
        if isNew { remember(ssrc, stream) }
        return plainEnd
    }
}
