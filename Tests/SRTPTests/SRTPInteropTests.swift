import SeededRandom
import Testing
@testable import SRTP

/// Our OpenSSL backend against Debian's libsrtp2: same bytes out, and each reads the other.
@Suite struct InteropTests {
    /// RTP packets of a few shapes across two SSRCs, in `wrapSequence` order.
    private func rtpStream() -> [[UInt8]] {
        var r = SplitMix64(seed: 42)
        var packets: [[UInt8]] = []
        for (i, seq) in wrapSequence.enumerated() {
            let ssrc: UInt32 = i % 3 == 0 ? 0x1234_5678 : 0xCAFE_BABE
            let payload = r.bytes(i % 7 == 0 ? 0 : 1 + (i * 37) % 1200)
            switch i % 4 {
            case 0: packets.append(rtpPacket(seq: seq, ssrc: ssrc, payload: payload))
            case 1: packets.append(rtpPacket(seq: seq, ssrc: ssrc, csrcs: [1, 2, 3], payload: payload))
            case 2: packets.append(rtpPacket(seq: seq, ssrc: ssrc, extensionWords: 2, payload: payload))
            default: packets.append(rtpPacket(seq: seq, ssrc: ssrc, csrcs: [9], extensionWords: 1, payload: payload))
            }
        }
        return packets
    }

    private func rtcpStream() -> [[UInt8]] {
        var r = SplitMix64(seed: 99)
        return (0..<40).map { i in rtcpPacket(ssrc: i % 2 == 0 ? 0x1234_5678 : 0x0BAD_F00D, extra: r.bytes((i * 4) % 64)) }
    }

    @Test(arguments: allProfiles)
    func protectIsByteIdenticalToLibsrtp(profile: SRTPProfile) throws {
        let keys = KeyPair(profile)
        let ours = try keys.sideA(profile, .openssl)
        let theirs = try keys.sideA(profile, .libsrtp)
        for (i, packet) in rtpStream().enumerated() {
            let a = try ours.protectRTP(packet)
            let b = try theirs.protectRTP(packet)
            #expect(a == b, "RTP packet \(i) (seq \(wrapSequence[i])) differs")
            #expect(a.count == packet.count + profile.rtpOverhead)
        }
        for (i, packet) in rtcpStream().enumerated() {
            let a = try ours.protectRTCP(packet)
            let b = try theirs.protectRTCP(packet)
            #expect(a == b, "RTCP packet \(i) differs")
            #expect(a.count == packet.count + profile.rtcpOverhead)
        }
        #expect(ours.stats.protected == theirs.stats.protected)
    }

    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func crossBackendRoundTrip(profile: SRTPProfile, sender: SRTPBackend) throws {
        let receiver: SRTPBackend = sender == .openssl ? .libsrtp : .openssl
        let keys = KeyPair(profile, seed: 11)
        let a = try keys.sideA(profile, sender)
        let b = try keys.sideB(profile, receiver)
        let packets = rtpStream()
        // The receiver sees them in another order again (pairs swapped), minus the NACK duplicate.
        var protected = try packets.map { try a.protectRTP($0) }
        var plain = packets
        protected.remove(at: 45); plain.remove(at: 45)
        for i in stride(from: 1, to: protected.count - 1, by: 5) {
            protected.swapAt(i, i + 1); plain.swapAt(i, i + 1)
        }
        for (i, packet) in protected.enumerated() {
            #expect(try b.unprotectRTP(packet) == plain[i], "RTP packet \(i)")
        }
        for packet in rtcpStream() {
            #expect(try b.unprotectRTCP(try a.protectRTCP(packet)) == packet)
        }
        // And the other direction with the same sessions.
        for packet in rtpStream().prefix(20) {
            #expect(try a.unprotectRTP(try b.protectRTP(packet)) == packet)
        }
        #expect(b.stats.unprotected == UInt64(protected.count + rtcpStream().count))
        #expect(b.stats.authFailures == 0 && b.stats.replays == 0)
    }

    @Test(arguments: allProfiles)
    func keyingMaterialSidesMatch(profile: SRTPProfile) throws {
        var r = SplitMix64(seed: 5)
        let material = r.bytes(2 * (profile.keyLength + profile.saltLength))
        let client = try SRTPSession(profile: profile, keyingMaterial: material, isClient: true)
        let server = try SRTPSession(profile: profile, keyingMaterial: material, isClient: false, backend: .libsrtp)
        let packet = rtpPacket(seq: 1, ssrc: 77, payload: r.bytes(100))
        #expect(try server.unprotectRTP(try client.protectRTP(packet)) == packet)
        #expect(try client.unprotectRTP(try server.protectRTP(packet)) == packet)
        #expect(throws: SRTPError.self) {
            try SRTPSession(profile: profile, keyingMaterial: [1, 2, 3], isClient: true)
        }
    }

    /// 100k packets from seq 40000 wrap twice; receiver in order: the ROC must keep up on both sides.
    @Test(arguments: allProfiles)
    func rolloverAcrossManyWraps(profile: SRTPProfile) throws {
        let keys = KeyPair(profile, seed: 3)
        let ours = try keys.sideA(profile, .openssl)
        let theirs = try keys.sideA(profile, .libsrtp)
        let receiver = try keys.sideB(profile, .openssl)
        var seq: UInt16 = 40_000
        let payload = [UInt8](repeating: 0xAB, count: 32)
        for i in 0..<100_000 {
            let packet = rtpPacket(seq: seq, ssrc: 0x55, payload: payload)
            let a = try ours.protectRTP(packet)
            if i % 1000 == 0 || (seq < 3 || seq > 65_533) {
                #expect(try theirs.protectRTP(packet) == a)
                #expect(try receiver.unprotectRTP(a) == packet)
            } else {
                _ = try theirs.protectRTP(packet)
            }
            seq &+= 1
        }
    }
}
