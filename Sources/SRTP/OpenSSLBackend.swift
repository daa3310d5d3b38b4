import COpenSSL

/// Session keys and EVP contexts for one direction (outbound or inbound) of RTP or RTCP.
final class OpenSSLKeys {
    /// Session salt, zero-padded to 16 bytes; XORed into every packet's IV.
    let salt: UnsafeMutablePointer<UInt8>
    let saltLength: Int
    let ctr: AESCounterMode?
    let hmac: HMACSHA1?
    let gcm: AESGCM?

    /// Derives the session keys of RTP or RTCP from a master key and salt (RFC 3711 §4.3).
    convenience init(profile: SRTPProfile, masterKey: [UInt8], masterSalt: [UInt8], rtcp: Bool, encrypting: Bool) throws(SRTPError) {
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
        switch profile {
        case .aes128CmHmacSha1_80:
            ctr = try AESCounterMode(key: sessionKey)
            hmac = try HMACSHA1(key: authKey)
            gcm = nil
        case .aeadAes128Gcm:
            ctr = nil
            hmac = nil
            gcm = try AESGCM(key: sessionKey, encrypting: encrypting)
        }
        // Allocated after the last throwing call, so a failed init leaks nothing.
        salt = .allocate(capacity: 16)
        salt.initialize(repeating: 0, count: 16)
        for (i, b) in sessionSalt.enumerated() { salt[i] = b }
        saltLength = profile.saltLength
    }

    deinit { salt.deallocate() }
}

/// Per-SSRC state, boxed so one dictionary lookup gives a mutable reference.
final class StreamState {
    var rtp = RTPIndexTracker()
    var rtcpReplay = RTCPReplayWindow()
    /// Last SRTCP index sent (libsrtp starts at 0 and increments before use, so the first is 1).
    var rtcpIndex: UInt32 = 0
}

/// Our SRTP/SRTCP implementation (RFC 3711, RFC 7714) on OpenSSL EVP. Packets are transformed in
/// place; every buffer it needs per packet is allocated once here.
final class OpenSSLSRTP {
    let profile: SRTPProfile
    let tagLength: Int
    private let rtpOut: OpenSSLKeys
    private let rtcpOut: OpenSSLKeys
    private let rtpIn: OpenSSLKeys
    private let rtcpIn: OpenSSLKeys

    private var outbound: [UInt32: StreamState] = [:]
    private var inbound: [UInt32: StreamState] = [:]
    private var lastOut: (ssrc: UInt32, state: StreamState)?
    private var lastIn: (ssrc: UInt32, state: StreamState)?

    /// Scratch: 16-byte IV, 20-byte MAC, 4-byte ROC / SRTCP trailer.
    private let iv: UnsafeMutablePointer<UInt8>
    private let mac: UnsafeMutablePointer<UInt8>
    private let word: UnsafeMutablePointer<UInt8>
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

    init(profile: SRTPProfile, rtpOut: OpenSSLKeys, rtcpOut: OpenSSLKeys, rtpIn: OpenSSLKeys, rtcpIn: OpenSSLKeys) {
        self.profile = profile
        tagLength = profile.tagLength
        self.rtpOut = rtpOut
        self.rtcpOut = rtcpOut
        self.rtpIn = rtpIn
        self.rtcpIn = rtcpIn
        iv = .allocate(capacity: 16)
        iv.initialize(repeating: 0, count: 16)
        mac = .allocate(capacity: HMACSHA1.digestLength)
        mac.initialize(repeating: 0, count: HMACSHA1.digestLength)
        word = .allocate(capacity: 4)
        word.initialize(repeating: 0, count: 4)
        plainCapacity = profile == .aeadAes128Gcm ? 2048 : 0
        plain = .allocate(byteCount: max(plainCapacity, 1), alignment: 16)
    }

    /// Test hook: makes the next SRTCP packet of `ssrc` carry index `last + 1`.
    func setLastRTCPIndex(_ last: UInt32, ssrc: UInt32) {
        outboundStream(ssrc).rtcpIndex = last
    }

    deinit {
        iv.deallocate()
        mac.deallocate()
        word.deallocate()
        plain.deallocate()
    }

    // MARK: Streams

    @inline(__always)
    private func outboundStream(_ ssrc: UInt32) -> StreamState {
        if let last = lastOut, last.ssrc == ssrc { return last.state }
        let state: StreamState
        if let s = outbound[ssrc] { state = s } else { state = StreamState(); outbound[ssrc] = state }
        lastOut = (ssrc, state)
        return state
    }

    /// Inbound streams are only remembered once a packet of theirs authenticates, so forged
    /// SSRCs cannot grow the table.
    @inline(__always)
    private func inboundStream(_ ssrc: UInt32) -> (StreamState, isNew: Bool) {
        if let last = lastIn, last.ssrc == ssrc { return (last.state, false) }
        if let s = inbound[ssrc] { lastIn = (ssrc, s); return (s, false) }
        return (StreamState(), true)
    }

    @inline(__always)
    private func remember(_ ssrc: UInt32, _ state: StreamState) {
        inbound[ssrc] = state
        lastIn = (ssrc, state)
    }

    // MARK: IVs

    /// AES-CM IV (RFC 3711 §4.1.1): salt·2^16 XOR SSRC·2^64 XOR index·2^16.
    @inline(__always)
    private func counterIV(_ keys: OpenSSLKeys, ssrc: UInt32, index: UInt64) {
        let s = keys.salt
        iv[0] = s[0]; iv[1] = s[1]; iv[2] = s[2]; iv[3] = s[3]
        iv[4] = s[4] ^ UInt8(truncatingIfNeeded: ssrc >> 24)
        iv[5] = s[5] ^ UInt8(truncatingIfNeeded: ssrc >> 16)
        iv[6] = s[6] ^ UInt8(truncatingIfNeeded: ssrc >> 8)
        iv[7] = s[7] ^ UInt8(truncatingIfNeeded: ssrc)
        iv[8] = s[8] ^ UInt8(truncatingIfNeeded: index >> 40)
        iv[9] = s[9] ^ UInt8(truncatingIfNeeded: index >> 32)
        iv[10] = s[10] ^ UInt8(truncatingIfNeeded: index >> 24)
        iv[11] = s[11] ^ UInt8(truncatingIfNeeded: index >> 16)
        iv[12] = s[12] ^ UInt8(truncatingIfNeeded: index >> 8)
        iv[13] = s[13] ^ UInt8(truncatingIfNeeded: index)
        iv[14] = 0
        iv[15] = 0
    }

    /// GCM IV (RFC 7714 §8.1, §9.1): 00 00 | SSRC | middle (4 bytes) | low (2 bytes), XOR salt.
    /// For SRTP middle|low = ROC|SEQ; for SRTCP = 00 00 | 31-bit SRTCP index.
    @inline(__always)
    private func gcmIV(_ keys: OpenSSLKeys, ssrc: UInt32, low48: UInt64) {
        let s = keys.salt
        iv[0] = s[0]; iv[1] = s[1]
        iv[2] = s[2] ^ UInt8(truncatingIfNeeded: ssrc >> 24)
        iv[3] = s[3] ^ UInt8(truncatingIfNeeded: ssrc >> 16)
        iv[4] = s[4] ^ UInt8(truncatingIfNeeded: ssrc >> 8)
        iv[5] = s[5] ^ UInt8(truncatingIfNeeded: ssrc)
        iv[6] = s[6] ^ UInt8(truncatingIfNeeded: low48 >> 40)
        iv[7] = s[7] ^ UInt8(truncatingIfNeeded: low48 >> 32)
        iv[8] = s[8] ^ UInt8(truncatingIfNeeded: low48 >> 24)
        iv[9] = s[9] ^ UInt8(truncatingIfNeeded: low48 >> 16)
        iv[10] = s[10] ^ UInt8(truncatingIfNeeded: low48 >> 8)
        iv[11] = s[11] ^ UInt8(truncatingIfNeeded: low48)
    }

    @inline(__always)
    private func storeWord(_ value: UInt32) {
        word[0] = UInt8(truncatingIfNeeded: value >> 24)
        word[1] = UInt8(truncatingIfNeeded: value >> 16)
        word[2] = UInt8(truncatingIfNeeded: value >> 8)
        word[3] = UInt8(truncatingIfNeeded: value)
    }

    private func ensurePlainCapacity(_ n: Int) {
        guard n > plainCapacity else { return }
        plain.deallocate()
        plainCapacity = max(n, plainCapacity * 2)
        plain = .allocate(byteCount: plainCapacity, alignment: 16)
    }

    private static let cryptoFailure = SRTPError(.internalError("OpenSSL EVP operation failed"))

    // MARK: SRTP

    func protectRTP(_ base: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        let header = try PacketLayout.rtpHeaderLength(base, available: length, packetLength: length)
        guard capacity >= length + tagLength else {
            throw SRTPError(.internalError("buffer holds \(capacity) bytes, protecting \(length) needs \(length + tagLength)"))
        }
        let seq = PacketLayout.load16(base, 2)
        let ssrc = PacketLayout.load32(base, 8)
        let stream = outboundStream(ssrc)
        let (index, delta) = stream.rtp.estimate(seq)
        // Same seq twice is a NACK re-send (libsrtp's allow_repeat_tx); older than the window is refused.
        if stream.rtp.check(delta) == .tooOld {
            throw SRTPError(.replay, "outbound SSRC \(ssrc) seq \(seq) is older than the \(replayWindowSize)-packet window")
        }
        stream.rtp.add(index: index, delta: delta)

        let payload = base + header
        let payloadLength = length - header
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let ctr = rtpOut.ctr, let hmac = rtpOut.hmac else { throw Self.cryptoFailure }
            counterIV(rtpOut, ssrc: ssrc, index: index)
            guard ctr.apply(iv: iv, data: payload, count: payloadLength) else { throw Self.cryptoFailure }
            storeWord(UInt32(truncatingIfNeeded: index >> 16))
            guard hmac.compute(base, count: length, suffix: word, suffixCount: 4, into: mac) else { throw Self.cryptoFailure }
            (base + length).copyMemory(from: mac, byteCount: tagLength)
        case .aeadAes128Gcm:
            guard let gcm = rtpOut.gcm else { throw Self.cryptoFailure }
            gcmIV(rtpOut, ssrc: ssrc, low48: index)
            guard gcm.seal(iv: iv, aad: base, aadCount: header, aad2: nil, aad2Count: 0,
                           data: payload, count: payloadLength, tag: base + length) else { throw Self.cryptoFailure }
        }
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
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let ctr = rtpIn.ctr, let hmac = rtpIn.hmac else { throw Self.cryptoFailure }
            storeWord(UInt32(truncatingIfNeeded: index >> 16))
            guard hmac.compute(base, count: end, suffix: word, suffixCount: 4, into: mac) else { throw Self.cryptoFailure }
            guard constantTimeEqual(mac, base + end, count: tagLength) else {
                throw SRTPError(.authenticationFailed, "SSRC \(ssrc) seq \(seq): HMAC-SHA1 tag at offset \(end) does not match")
            }
            counterIV(rtpIn, ssrc: ssrc, index: index)
            guard ctr.apply(iv: iv, data: payload, count: payloadLength) else { throw Self.cryptoFailure }
        case .aeadAes128Gcm:
            guard let gcm = rtpIn.gcm else { throw Self.cryptoFailure }
            gcmIV(rtpIn, ssrc: ssrc, low48: index)
            ensurePlainCapacity(payloadLength)
            guard gcm.open(iv: iv, aad: base, aadCount: header, aad2: nil, aad2Count: 0,
                           input: payload, output: plain, count: payloadLength, tag: base + end) else {
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
        let stream = outboundStream(ssrc)
        guard stream.rtcpIndex < 0x7FFF_FFFF else {
            throw SRTPError(.internalError("SRTCP index space of SSRC \(ssrc) exhausted; re-key"))
        }
        stream.rtcpIndex += 1
        let index = stream.rtcpIndex
        let trailer = 0x8000_0000 | index  // E flag: encrypted
        let payload = base + PacketLayout.rtcpFixedHeader
        let payloadLength = length - PacketLayout.rtcpFixedHeader
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let ctr = rtcpOut.ctr, let hmac = rtcpOut.hmac else { throw Self.cryptoFailure }
            counterIV(rtcpOut, ssrc: ssrc, index: UInt64(index))
            guard ctr.apply(iv: iv, data: payload, count: payloadLength) else { throw Self.cryptoFailure }
            PacketLayout.store32(base, length, trailer)
            guard hmac.compute(base, count: length + 4, suffix: word, suffixCount: 0, into: mac) else { throw Self.cryptoFailure }
            (base + length + 4).copyMemory(from: mac, byteCount: tagLength)
        case .aeadAes128Gcm:
            guard let gcm = rtcpOut.gcm else { throw Self.cryptoFailure }
            gcmIV(rtcpOut, ssrc: ssrc, low48: UInt64(index))
            storeWord(trailer)
            guard gcm.seal(iv: iv, aad: base, aadCount: PacketLayout.rtcpFixedHeader, aad2: word, aad2Count: 4,
                           data: payload, count: payloadLength, tag: base + length) else { throw Self.cryptoFailure }
            PacketLayout.store32(base, length + tagLength, trailer)
        }
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
        switch profile {
        case .aes128CmHmacSha1_80:
            guard let ctr = rtcpIn.ctr, let hmac = rtcpIn.hmac else { throw Self.cryptoFailure }
            guard hmac.compute(base, count: tagOffset, suffix: word, suffixCount: 0, into: mac) else { throw Self.cryptoFailure }
            guard constantTimeEqual(mac, base + tagOffset, count: tagLength) else {
                throw SRTPError(.authenticationFailed, "SRTCP SSRC \(ssrc) index \(index): HMAC-SHA1 tag at offset \(tagOffset) does not match")
            }
            if encrypted {
                counterIV(rtcpIn, ssrc: ssrc, index: UInt64(index))
                guard ctr.apply(iv: iv, data: payload, count: payloadLength) else { throw Self.cryptoFailure }
            }
        case .aeadAes128Gcm:
            guard let gcm = rtcpIn.gcm else { throw Self.cryptoFailure }
            gcmIV(rtcpIn, ssrc: ssrc, low48: UInt64(index))
            storeWord(trailer)
            let ok: Bool
            if encrypted {
                ensurePlainCapacity(payloadLength)
                ok = gcm.open(iv: iv, aad: base, aadCount: PacketLayout.rtcpFixedHeader, aad2: word, aad2Count: 4,
                              input: payload, output: plain, count: payloadLength, tag: base + tagOffset)
            } else {
                // Not encrypted: the whole packet is authenticated data.
                ok = gcm.open(iv: iv, aad: base, aadCount: plainEnd, aad2: word, aad2Count: 4,
                              input: payload, output: plain, count: 0, tag: base + tagOffset)
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
