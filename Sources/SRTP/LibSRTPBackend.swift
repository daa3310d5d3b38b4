import CSRTP

/// libsrtp2's global state: `srtp_init` must run once per process before any session.
enum LibSRTPLibrary {
    /// Swift runs a global's initialiser exactly once, thread-safely (swift_once), which is the
    /// guard libsrtp asks for.
    private static let initStatus: UInt32 = srtp_init().rawValue

    static func ensureInitialized() throws(SRTPError) {
        guard initStatus == srtp_err_status_ok.rawValue else {
            throw SRTPError(.internalError("srtp_init failed with status \(initStatus)"))
        }
    }

    static func error(_ status: srtp_err_status_t, _ what: String) -> SRTPError {
        switch status {
        case srtp_err_status_auth_fail: SRTPError(.authenticationFailed, "libsrtp: \(what)")
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: SRTPError(.replay, "libsrtp: \(what)")
        case srtp_err_status_cant_check: SRTPError(.badHeader, "libsrtp: \(what): SRTCP E flag disagrees with the policy")
        case srtp_err_status_bad_param, srtp_err_status_parse_err: SRTPError(.badHeader, "libsrtp: \(what) (status \(status.rawValue))")
        default: SRTPError(.internalError("libsrtp \(what) returned status \(status.rawValue)"))
        }
    }
}

/// Two libsrtp2 sessions: one for any outbound SSRC (local keys) and one for any inbound SSRC
/// (remote keys).
final class LibSRTPContext {
    let profile: SRTPProfile
    private let outbound: srtp_t
    private let inbound: srtp_t

    init(profile: SRTPProfile, localKey: [UInt8], localSalt: [UInt8], remoteKey: [UInt8], remoteSalt: [UInt8]) throws(SRTPError) {
        try LibSRTPLibrary.ensureInitialized()
        self.profile = profile
        outbound = try Self.create(profile: profile, key: localKey + localSalt, type: ssrc_any_outbound)
        do {
            inbound = try Self.create(profile: profile, key: remoteKey + remoteSalt, type: ssrc_any_inbound)
        } catch {
            srtp_dealloc(outbound)
            throw error
        }
    }

    deinit {
        srtp_dealloc(outbound)
        srtp_dealloc(inbound)
    }

    private static func create(profile: SRTPProfile, key: [UInt8], type: srtp_ssrc_type_t) throws(SRTPError) -> srtp_t {
        var policy = srtp_policy_t()
        switch profile {
        case .aes128CmHmacSha1_80:
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
        case .aeadAes128Gcm:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        }
        policy.ssrc.type = type
        policy.ssrc.value = 0
        // 1024, as our backend: late retransmissions must pass both alike (SRTCP stays at libsrtp's fixed 128).
        policy.window_size = UInt(replayWindowSize)
        // NACK re-sends reuse the sequence number on the sending side; a receiver never accepts repeats.
        policy.allow_repeat_tx = type == ssrc_any_outbound ? 1 : 0
        policy.next = nil
        var session: srtp_t?
        var keyCopy = key
        let status = keyCopy.withUnsafeMutableBufferPointer { k in
            policy.key = k.baseAddress
            return srtp_create(&session, &policy)
        }
        guard status == srtp_err_status_ok, let session else {
            throw LibSRTPLibrary.error(status, "srtp_create")
        }
        return session
    }

    private static func checkedLength(_ length: Int, _ capacity: Int, _ overhead: Int, _ what: String) throws(SRTPError) -> Int32 {
        guard length >= 0, length <= capacity, length + overhead <= Int(Int32.max) else {
            throw SRTPError(.internalError("\(what): length \(length) invalid for buffer of \(capacity)"))
        }
        guard capacity >= length + overhead else {
            throw SRTPError(.internalError("\(what): buffer holds \(capacity) bytes, needs \(length + overhead)"))
        }
        return Int32(length)
    }

    func protectRTP(_ base: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        // libsrtp reads the header itself, but checking first gives the same errors as our backend.
        _ = try PacketLayout.rtpHeaderLength(base, available: length, packetLength: length)
        var n = try Self.checkedLength(length, capacity, profile.rtpOverhead, "protect RTP")
        let status = srtp_protect(outbound, base, &n)
        guard status == srtp_err_status_ok else { throw LibSRTPLibrary.error(status, "srtp_protect") }
        return Int(n)
    }

    func unprotectRTP(_ base: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        guard length >= PacketLayout.rtpFixedHeader + profile.tagLength else {
            throw SRTPError(.tooShort, "\(length) bytes, SRTP needs at least \(PacketLayout.rtpFixedHeader + profile.tagLength)")
        }
        _ = try PacketLayout.rtpHeaderLength(base, available: length - profile.tagLength, packetLength: length)
        var n = Int32(clamping: length)
        let status = srtp_unprotect(inbound, base, &n)
        guard status == srtp_err_status_ok else { throw LibSRTPLibrary.error(status, "srtp_unprotect") }
        return Int(n)
    }

    func protectRTCP(_ base: UnsafeMutableRawPointer, length: Int, capacity: Int) throws(SRTPError) -> Int {
        try PacketLayout.checkRTCPHeader(base, available: length, packetLength: length)
        var n = try Self.checkedLength(length, capacity, profile.rtcpOverhead, "protect RTCP")
        let status = srtp_protect_rtcp(outbound, base, &n)
        guard status == srtp_err_status_ok else { throw LibSRTPLibrary.error(status, "srtp_protect_rtcp") }
        return Int(n)
    }

    func unprotectRTCP(_ base: UnsafeMutableRawPointer, length: Int) throws(SRTPError) -> Int {
        let minimum = PacketLayout.rtcpFixedHeader + profile.rtcpOverhead
        guard length >= minimum else {
            throw SRTPError(.tooShort, "\(length) bytes, SRTCP needs at least \(minimum)")
        }
        try PacketLayout.checkRTCPHeader(base, available: length - profile.rtcpOverhead, packetLength: length)
        var n = Int32(clamping: length)
        let status = srtp_unprotect_rtcp(inbound, base, &n)
        guard status == srtp_err_status_ok else { throw LibSRTPLibrary.error(status, "srtp_unprotect_rtcp") }
        return Int(n)
    }
}
