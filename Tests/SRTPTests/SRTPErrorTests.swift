import Testing
@testable import SRTP

@Suite struct ErrorTests {
    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func replayIsRejected(profile: SRTPProfile, backend: SRTPBackend) throws {
        let keys = KeyPair(profile)
        let a = try keys.sideA(profile, .openssl)
        let b = try keys.sideB(profile, backend)
        let first = try a.protectRTP(rtpPacket(seq: 500, ssrc: 1, payload: [1, 2, 3]))
        _ = try b.unprotectRTP(first)
        #expect(throws: SRTPError.replay) { try b.unprotectRTP(first) }
        // Far behind the window.
        let old = try a.protectRTP(rtpPacket(seq: 10, ssrc: 2, payload: [4]))
        for s in 11...(20 + replayWindowSize) { _ = try b.unprotectRTP(try a.protectRTP(rtpPacket(seq: UInt16(s), ssrc: 2, payload: [5]))) }
        #expect(throws: SRTPError.replay) { try b.unprotectRTP(old) }

        let rtcp = try a.protectRTCP(rtcpPacket(ssrc: 1))
        _ = try b.unprotectRTCP(rtcp)
        #expect(throws: SRTPError.replay) { try b.unprotectRTCP(rtcp) }
        #expect(b.stats.replays == 3)
        #expect(b.stats.unprotected == UInt64(1 + replayWindowSize + 10 + 1))
    }

    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func tamperingFailsAuthentication(profile: SRTPProfile, backend: SRTPBackend) throws {
        let keys = KeyPair(profile)
        let a = try keys.sideA(profile, .openssl)
        let b = try keys.sideB(profile, backend)
        let packet = rtpPacket(seq: 9, ssrc: 3, payload: [UInt8](repeating: 7, count: 64))
        let good = try a.protectRTP(packet)
        // Flip one bit in the header, the payload and the tag.
        for offset in [1, 20, good.count - 1] {
            var bad = good
            bad[offset] ^= 0x01
            #expect(throws: SRTPError.authenticationFailed) { try b.unprotectRTP(bad) }
        }
        // The original still goes through afterwards: failures do not advance the window.
        #expect(try b.unprotectRTP(good) == packet)

        var badRTCP = try a.protectRTCP(rtcpPacket(ssrc: 3))
        badRTCP[12] ^= 0x80
        #expect(throws: SRTPError.authenticationFailed) { try b.unprotectRTCP(badRTCP) }
        #expect(b.stats.authFailures == 4)

        // Wrong keys altogether.
        let stranger = try KeyPair(profile, seed: 1234).sideA(profile, .openssl)
        let fresh = rtpPacket(seq: 10, ssrc: 3, payload: [1])
        #expect(throws: SRTPError.authenticationFailed) { try b.unprotectRTP(try stranger.protectRTP(fresh)) }
        #expect(b.stats.authFailures == 5)
    }

    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func truncatedPacketsThrow(profile: SRTPProfile, backend: SRTPBackend) throws {
        let keys = KeyPair(profile)
        let a = try keys.sideA(profile, .openssl)
        let b = try keys.sideB(profile, backend)
        let good = try a.protectRTP(rtpPacket(seq: 1, ssrc: 4, csrcs: [1, 2], extensionWords: 3, payload: [1, 2, 3, 4]))
        for n in 0..<good.count {
            #expect(throws: SRTPError.self) { try b.unprotectRTP(Array(good[0..<n])) }
        }
        let goodRTCP = try a.protectRTCP(rtcpPacket(ssrc: 4))
        for n in 0..<goodRTCP.count {
            #expect(throws: SRTPError.self) { try b.unprotectRTCP(Array(goodRTCP[0..<n])) }
        }
        #expect(throws: SRTPError.tooShort) { try b.unprotectRTP([0x80, 0, 0]) }
        #expect(throws: SRTPError.tooShort) { try a.protectRTP([0x80, 0, 0, 1]) }
        #expect(throws: SRTPError.tooShort) { try a.protectRTCP([0x80, 200, 0]) }
        #expect(try b.unprotectRTP(good).count == good.count - profile.rtpOverhead)
    }

    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func badHeadersAreErrorsNotTraps(profile: SRTPProfile, backend: SRTPBackend) throws {
        let a = try KeyPair(profile).sideA(profile, backend)
        // CSRC count 15 with no CSRCs present.
        var p = rtpPacket(seq: 1, ssrc: 5, payload: [1, 2, 3, 4])
        p[0] = 0x8F
        #expect(throws: SRTPError.badHeader) { try a.protectRTP(p) }
        // Extension claiming 0xFFFF words.
        var e = rtpPacket(seq: 2, ssrc: 5, extensionWords: 1, payload: [1, 2])
        e[14] = 0xFF; e[15] = 0xFF
        #expect(throws: SRTPError.badHeader) { try a.protectRTP(e) }
        // Extension flag set but no room for the extension header.
        var x = rtpPacket(seq: 3, ssrc: 5, payload: [])
        x[0] |= 0x10
        #expect(throws: SRTPError.badHeader) { try a.protectRTP(x) }
        // Wrong version.
        var v = rtpPacket(seq: 4, ssrc: 5, payload: [1])
        v[0] = 0x40
        #expect(throws: SRTPError.badHeader) { try a.protectRTP(v) }
        var r = rtcpPacket(ssrc: 5)
        r[0] = 0x00
        #expect(throws: SRTPError.badHeader) { try a.protectRTCP(r) }
        // A header-only packet is fine.
        #expect(try a.protectRTP(rtpPacket(seq: 5, ssrc: 5, payload: [])).count == 12 + profile.rtpOverhead)
    }

    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func inPlaceBuffers(profile: SRTPProfile, backend: SRTPBackend) throws {
        let keys = KeyPair(profile)
        let a = try keys.sideA(profile, backend)
        let b = try keys.sideB(profile, .openssl)
        let packet = rtpPacket(seq: 77, ssrc: 6, payload: [UInt8](repeating: 3, count: 1200))
        var buffer = [UInt8](repeating: 0, count: 1500)
        buffer.replaceSubrange(0..<packet.count, with: packet)
        let n = try buffer.withUnsafeMutableBytes { try a.protectRTP(in: $0, length: packet.count) }
        #expect(n == packet.count + profile.rtpOverhead)
        let m = try buffer.withUnsafeMutableBytes { try b.unprotectRTP(in: $0, length: n) }
        #expect(Array(buffer[0..<m]) == packet)

        // No room for the tag: an error, and nothing written past the buffer.
        var tight = packet
        #expect(throws: SRTPError.self) {
            try tight.withUnsafeMutableBytes { try a.protectRTP(in: $0, length: packet.count) }
        }
        #expect(throws: SRTPError.self) {
            try tight.withUnsafeMutableBytes { try a.protectRTP(in: $0, length: packet.count + 1) }
        }
    }

    @Test func gcmForgeryLeavesBufferUntouched() throws {
        let keys = KeyPair(.aeadAes128Gcm)
        let a = try keys.sideA(.aeadAes128Gcm, .openssl)
        let b = try keys.sideB(.aeadAes128Gcm, .openssl)
        var protected = try a.protectRTP(rtpPacket(seq: 1, ssrc: 8, payload: [UInt8](repeating: 1, count: 50)))
        protected[protected.count - 1] ^= 1
        let copy = protected
        #expect(throws: SRTPError.authenticationFailed) {
            try protected.withUnsafeMutableBytes { try b.unprotectRTP(in: $0, length: $0.count) }
        }
        #expect(protected == copy)
    }

    @Test func senderAllowsNackResendButNotAncientIndex() throws {
        for backend in [SRTPBackend.openssl, .libsrtp] {
            let a = try KeyPair(.aes128CmHmacSha1_80).sideA(.aes128CmHmacSha1_80, backend)
            let p = rtpPacket(seq: 100, ssrc: 9, payload: [1, 2, 3])
            let first = try a.protectRTP(p)
            #expect(try a.protectRTP(p) == first)
            for s in 101...(200 + replayWindowSize) { _ = try a.protectRTP(rtpPacket(seq: UInt16(s), ssrc: 9, payload: [0])) }
            #expect(throws: SRTPError.replay) { try a.protectRTP(p) }
        }
    }

    @Test func errorsDescribeThemselves() {
        let e = SRTPError(.badHeader, "RTP version 1 at offset 0, expected 2")
        #expect(e.description == "SRTP bad packet header: RTP version 1 at offset 0, expected 2")
        #expect(e == .badHeader)
        #expect(SRTPError(.internalError("x")).description == "SRTP internal error: x")
        #expect(throws: SRTPError.self) {
            try SRTPSession(profile: .aeadAes128Gcm, localKey: [UInt8](repeating: 0, count: 16), localSalt: [0],
                            remoteKey: [UInt8](repeating: 0, count: 16), remoteSalt: [UInt8](repeating: 0, count: 12))
        }
    }
}
