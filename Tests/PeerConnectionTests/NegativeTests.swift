import Foundation
import PeerConnection
import STUN
import Testing
import Transport

@Suite("PeerConnection under bad input")
struct NegativeTests {
    @Test("a certificate that does not match the SDP fingerprint fails the connection, naming the mismatch")
    func fingerprintMismatch() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        try await a.addTransceiver(.audio)
        // Replace B's fingerprint in the answer A sees with that of an unrelated certificate.
        let impostor = try loopbackPeer().fingerprint
        try await negotiate(a, b) { sdp in
            sdp.split(separator: "\r\n", omittingEmptySubsequences: false).map { line in
                line.hasPrefix("a=fingerprint:") ? "a=fingerprint:\(impostor.algorithm) \(impostor.value)" : String(line)
            }.joined(separator: "\r\n")
        }
        let error = await #expect(throws: PeerConnectionError.self) { try await a.waitConnected(timeout: .seconds(10)) }
        let text = error?.description ?? ""
        #expect(text.contains("does not match"), "\(text)")
        #expect(text.contains(impostor.value), "\(text)")
        #expect(a.connectionState == .failed && a.dtlsState == .failed)
        await a.close()
        await b.close()
    }

    @Test("malformed SDP is rejected with its line number and the connection stays usable")
    func malformedSDP() async throws {
        let pc = try loopbackPeer()
        let bad = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio nine UDP/TLS/RTP/SAVPF 111\r\n"
        let error = await #expect(throws: PeerConnectionError.self) {
            try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: bad))
        }
        #expect(error?.description.contains("SDP line 5") == true, "\(error?.description ?? "")")
        #expect(pc.signalingState == .stable)
        let noFingerprint = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\na=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=rtpmap:111 opus/48000/2\r\n"
        let e2 = await #expect(throws: PeerConnectionError.self) {
            try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: noFingerprint))
        }
        #expect(e2?.description.contains("fingerprint") == true)
        // A good offer still works afterwards.
        let other = try loopbackPeer()
        try await other.addTransceiver(.audio)
        try await pc.setRemoteDescription(try await other.createOffer())
        #expect(pc.signalingState == .haveRemoteOffer)
        await pc.close()
        await other.close()
    }

    @Test("garbage STUN, DTLS, RTP and RTCP datagrams are dropped and counted; media keeps flowing")
    func garbageDatagrams() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer { $0.remoteTransceiverDirection = .sendrecv }
        let t = try await a.addTransceiver(.audio)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        let target = try advertisedAddress(b)
        let rogue = try UDPSocket(bind: try #require(SocketAddress(host: "127.0.0.1", port: 0)))
        var rng = SystemRandomNumberGenerator()
        var sent = 0
        for first: UInt8 in [0, 1, 20, 22, 23, 128, 129, 144, 200, 201, 255, 70] {
            for length in [1, 2, 12, 13, 20, 28, 100] {
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
                bytes[0] = first
                if length > 1 && first >= 128 { bytes[1] = first == 200 || first == 201 ? 200 : 111 }
                rogue.send(bytes, to: target)
                sent += 1
            }
        }
        // Media after the garbage still arrives.
        let log = PacketLog()
        try #require(b.transceivers.count == 1)
        b.transceivers[0].receiver.onRTP = { log.append($0) }
        for i in 0..<10 { t.sender.send(payloadType: 111, payload: [UInt8(i)], timestamp: UInt32(i * 960)) }
        let got = await log.wait(for: 10)
        #expect(got.map(\.payload) == (0..<10).map { [UInt8($0)] })
        #expect(b.connectionState == .connected)
        let stats = await b.transportStatistics()
        let dropped = ["srtpErrors", "unknownDatagrams", "unverifiedDatagrams", "stunGarbage", "stunBadIntegrity", "stunBadFingerprint",
                       "stunUnauthorized", "dtlsDroppedRecords", "malformedRTP", "malformedRTCP"].reduce(0) { $0 + (stats[$1] ?? 0) }
        #expect(dropped >= sent * 3 / 4, "\(stats)")
        #expect(stats["unknownDatagrams", default: 0] > 0)
        // DTLS and media from an address no authenticated check came from are not even read,
        // and draw no answer (a STUN error for garbage checks is all the rogue may get).
        // (first bytes 20, 22, 23 are DTLS, 128, 129, 144 media: 6 kinds × 7 lengths)
        #expect(stats["unverifiedDatagrams", default: 0] == 6 * 7, "\(stats)")
        #expect(stats["srtpErrors", default: 0] == 0)
        var reply = [UInt8](repeating: 0, count: 2048)
        while let (n, _) = reply.withUnsafeMutableBytes({ rogue.receive(into: $0) }) {
            #expect(reply[0] < 4, "the rogue got \(n) bytes of non-STUN")
        }
        rogue.close()
        await a.close()
        await b.close()
    }

    @Test("API misuse gives clear errors")
    func misuse() async throws {
        let pc = try loopbackPeer()
        await #expect(throws: PeerConnectionError.self) { _ = try await pc.createAnswer() }
        await #expect(throws: PeerConnectionError.self) {
            try await pc.addIceCandidate(IceCandidate(candidate: "candidate:garbage"))
        }
        await pc.close()
        await #expect(throws: PeerConnectionError.self) { _ = try await pc.createOffer() }
    }
}
