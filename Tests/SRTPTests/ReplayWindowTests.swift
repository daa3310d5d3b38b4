import SeededRandom
import Testing
@testable import SRTP

/// The 1024-packet SRTP replay window: late retransmissions pass once, both backends agree.
@Suite struct ReplayWindowTests {
    enum Outcome: Equatable { case accepted, replay, other }

    private func deliver(_ session: SRTPSession, _ packet: [UInt8]) -> Outcome {
        do {
            _ = try session.unprotectRTP(packet)
            return .accepted
        } catch let e {
            return e == SRTPError.replay ? .replay : .other
        }
    }

    /// Newest is seq 3000; packets 1000, 1023, 1024 and 1100 behind were held back by the network.
    private func lateArrivals(profile: SRTPProfile, receiver: SRTPBackend) throws -> [Outcome] {
        let keys = KeyPair(profile, seed: 21)
        let a = try keys.sideA(profile, .openssl)
        let b = try keys.sideB(profile, receiver)
        let held: Set<Int> = [2000, 1977, 1976, 1900]
        var late: [Int: [UInt8]] = [:]
        for s in 1800...3000 {
            let p = try a.protectRTP(rtpPacket(seq: UInt16(s), ssrc: 0x77, payload: [UInt8(s & 0xFF), 1, 2]))
            if held.contains(s) { late[s] = p } else { #expect(deliver(b, p) == .accepted) }
        }
        var out: [Outcome] = []
        for s in [2000, 2000, 1977, 1976, 1900] {
            guard let p = late[s] else { return [] }
            out.append(deliver(b, p))
        }
        return out
    }

    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func lateRetransmissionAcceptedOnceThenReplay(profile: SRTPProfile, receiver: SRTPBackend) throws {
        // 1000 behind: accepted, then a replay; 1023 behind: inside; 1024 and 1100 behind: too old.
        #expect(try lateArrivals(profile: profile, receiver: receiver) == [.accepted, .replay, .accepted, .replay, .replay])
    }

    @Test(arguments: allProfiles)
    func backendsAgreeOnLateArrivals(profile: SRTPProfile) throws {
        #expect(try lateArrivals(profile: profile, receiver: .openssl) == lateArrivals(profile: profile, receiver: .libsrtp))
    }

    /// Resending a packet (a NACK answered without RTX) protects the same index again, byte for
    /// byte, even 1000 packets later; 1100 later it is outside the window on both backends.
    @Test(arguments: allProfiles)
    func senderResendsWithinWindow(profile: SRTPProfile) throws {
        for backend in [SRTPBackend.openssl, .libsrtp] {
            let a = try KeyPair(profile).sideA(profile, backend)
            let near = rtpPacket(seq: 1100, ssrc: 5, payload: [9, 9])
            let far = rtpPacket(seq: 1000, ssrc: 5, payload: [8, 8])
            _ = try a.protectRTP(far)
            let first = try a.protectRTP(near)
            for s in 1101...2100 { _ = try a.protectRTP(rtpPacket(seq: UInt16(s), ssrc: 5, payload: [0])) }
            #expect(try a.protectRTP(near) == first, "\(backend)")
            #expect(throws: SRTPError.replay) { try a.protectRTP(far) }
        }
    }

    /// Five SSRCs sent interleaved from one session (two kept inline, the rest in the table),
    /// each across a sequence-number rollover: libsrtp and our receiver decrypt every packet,
    /// so each stream's rollover counter and SRTCP index are its own.
    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func manyOutboundStreamsKeepTheirOwnIndices(profile: SRTPProfile, receiver: SRTPBackend) throws {
        let keys = KeyPair(profile, seed: 31)
        let a = try keys.sideA(profile, .openssl)
        let b = try keys.sideB(profile, receiver)
        let ssrcs: [UInt32] = [0x10, 0x20, 0x30, 0x40, 0x50]
        for step in 0..<300 {
            for (k, ssrc) in ssrcs.enumerated() {
                // Each stream starts at its own point and wraps 65535 → 0 at its own time.
                let seq = UInt16(truncatingIfNeeded: 65_400 + 37 * k + step)
                let plain = rtpPacket(seq: seq, ssrc: ssrc, payload: [UInt8(k), UInt8(step & 0xFF), 7])
                #expect(try b.unprotectRTP(try a.protectRTP(plain)) == plain, "ssrc \(ssrc) step \(step)")
            }
            if step % 50 == 0 {
                for ssrc in ssrcs.reversed() {
                    #expect(try b.unprotectRTCP(try a.protectRTCP(rtcpPacket(ssrc: ssrc))) == rtcpPacket(ssrc: ssrc))
                }
            }
        }
        // A re-send of the newest packet is protected again (allow_repeat_tx); the receiver refuses it as a replay.
        let resend = rtpPacket(seq: UInt16(truncatingIfNeeded: 65_400 + 37 * 4 + 299), ssrc: 0x50, payload: [9])
        #expect(throws: SRTPError.replay) { try b.unprotectRTP(try a.protectRTP(resend)) }
    }

    /// SRTCP keeps libsrtp's fixed 128-index window on both backends.
    @Test(arguments: allProfiles, [SRTPBackend.openssl, .libsrtp])
    func srtcpWindowStays128(profile: SRTPProfile, receiver: SRTPBackend) throws {
        let keys = KeyPair(profile, seed: 4)
        let a = try keys.sideA(profile, .openssl)
        let b = try keys.sideB(profile, receiver)
        let old = try a.protectRTCP(rtcpPacket(ssrc: 3))      // index 1
        _ = try b.unprotectRTCP(try a.protectRTCP(rtcpPacket(ssrc: 3)))
        let inside = try a.protectRTCP(rtcpPacket(ssrc: 3))   // index 3
        // Up to index 130: the window is now 3…130.
        for _ in 0..<127 { _ = try b.unprotectRTCP(try a.protectRTCP(rtcpPacket(ssrc: 3))) }
        #expect(throws: SRTPError.replay) { try b.unprotectRTCP(old) }
        #expect(try b.unprotectRTCP(inside) == rtcpPacket(ssrc: 3))
    }

    /// Shifts across word boundaries against a plain set of indices.
    @Test func bitmapMatchesModel() {
        var bits = ReplayBitmap(bits: 1024)
        var model = Set<Int>()
        var rng = SplitMix64(seed: 99)
        for step in 0..<3000 {
            let r = rng.bytes(3)
            let k = (Int(r[0]) << 8 | Int(r[1])) % 1024
            switch r[2] % 4 {
            case 0, 1:
                bits.set(k); model.insert(k)
            case 2:
                let n = k % 200
                bits.shiftUp(n); model = Set(model.map { $0 + n }.filter { $0 < 1024 })
            default:
                let n = k % 200
                bits.shiftDown(n); model = Set(model.map { $0 - n }.filter { $0 >= 0 })
            }
            if step % 50 == 0 || step == 2999 {
                #expect((0..<1024).filter { bits.get($0) } == model.sorted(), "step \(step)")
            }
        }
        bits.shiftUp(1024)
        #expect(!(0..<1024).contains { bits.get($0) })
        #expect(!bits.get(-1) && !bits.get(1024))
    }
}
