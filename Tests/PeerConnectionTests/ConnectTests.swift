import Foundation
import PeerConnection
import RTP
import Testing

@Suite("PeerConnection over loopback")
struct ConnectTests {
    @Test("offer/answer connects both sides and RTP crosses both ways byte for byte")
    func connectAndExchangeRTP() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer { $0.remoteTransceiverDirection = .sendrecv }
        let audioA = try await a.addTransceiver(.audio)
        let videoA = try await a.addTransceiver(.video, codecs: [.h264])
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        #expect(a.connectionState == .connected && b.connectionState == .connected)
        #expect(a.dtlsState == .connected)

        let bTransceivers = b.transceivers
        try #require(bTransceivers.count == 2)
        #expect(bTransceivers.map(\.mid) == ["0", "1"])
        #expect(bTransceivers[1].negotiatedCodecs.map(\.mimeType) == ["video/H264", "video/rtx"])
        #expect(bTransceivers[1].negotiatedCodecs.first?.sdpFmtpLine?.contains("profile-level-id=42e01f") == true)

        let atB = PacketLog(), atA = PacketLog()
        bTransceivers[1].receiver.onRTP = { atB.append($0) }
        videoA.receiver.onRTP = { atA.append($0) }
        let payloads = (0..<20).map { i in (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) } }
        for (i, p) in payloads.enumerated() {
            videoA.sender.send(payloadType: 102, payload: p, timestamp: UInt32(i * 3000), marker: i % 2 == 0)
        }
        let got = await atB.wait(for: 20)
        #expect(got.map(\.payload) == payloads)
        #expect(Set(got.map(\.ssrc)) == [videoA.sender.ssrc])
        #expect(got.allSatisfy { $0.payloadType == 102 })
        #expect(got.map(\.marker) == (0..<20).map { $0 % 2 == 0 })

        bTransceivers[1].sender.send(payloadType: 102, payload: [1, 2, 3], timestamp: 1)
        let back = await atA.wait(for: 1)
        #expect(back.first?.payload == [1, 2, 3])
        #expect(audioA.currentDirection == .sendrecv)

        await a.close()
        await b.close()
        #expect(a.connectionState == .closed)
    }

    @Test("candidates trickled with addIceCandidate instead of inside the SDP")
    func trickle() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        try await a.addTransceiver(.audio)
        let offer = try await a.createOffer()
        try await a.setLocalDescription(offer)
        await a.waitForGatheringComplete()
        // The offer as created has no candidates: B gets them one by one.
        #expect(!offer.sdp.contains("a=candidate"))
        try await b.setRemoteDescription(offer)
        let answer = try await b.createAnswer()
        try await b.setLocalDescription(answer)
        try await a.setRemoteDescription(answer)
        for line in try #require(a.localDescription).sdp.split(separator: "\r\n") where line.hasPrefix("a=candidate:") {
            try await b.addIceCandidate(IceCandidate(candidate: String(line.dropFirst(2)), sdpMid: "0", sdpMLineIndex: 0))
        }
        try await b.addIceCandidate(IceCandidate(candidate: ""))
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        await a.close()
        await b.close()
    }

    @Test("events stream reports gathering, ICE and connection states in order")
    func eventsInOrder() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        try await a.addTransceiver(.video)
        let collector = Task { () -> [PeerConnectionState] in
            var states: [PeerConnectionState] = []
            for await event in a.events {
                if case .connectionStateChanged(let s) = event {
                    states.append(s)
                    if s == .closed { break }
                }
            }
            return states
        }
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        await a.close()
        await b.close()
        let states = await collector.value
        #expect(states == [.connecting, .connected, .closed])
    }
}
