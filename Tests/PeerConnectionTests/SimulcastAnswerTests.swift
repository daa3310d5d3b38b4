import PeerConnection
import SDP
import Testing
import Transport

/// Receiving simulcast (RFC 8853), as the relay's publishers do (`receiveSimulcast`): the answer
/// takes the offer's rids in its order and the stream-id extensions; without it, nothing of them,
/// so a browser sends its first encoding only (JSEP).
@Suite struct SimulcastAnswerTests {
    /// A sendonly video offer (its SDP) as Chromium writes it for `sendEncodings` l, m, h.
    func simulcastOffer() async throws -> String {
        let offerer = try loopbackPeer()
        _ = try await offerer.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.vp8])
        try await offerer.setLocalDescription(try await offerer.createOffer())
        let sdp = try #require(offerer.localDescription).sdp
        await offerer.close()
        let added = ["a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
                     "a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id",
                     "a=rid:l send", "a=rid:m send", "a=rid:h send max-width=1280", "a=simulcast:send l;m;h"]
        return sdp + added.map { $0 + "\r\n" }.joined()
    }

    func answer(receiveSimulcast: Bool) async throws -> (SDP.MediaDescription, [String]) {
        let answerer = try loopbackPeer { $0.receiveSimulcast = receiveSimulcast }
        try await answerer.setRemoteDescription(.init(type: .offer, sdp: try await simulcastOffer()))
        let answer = try await answerer.createAnswer()
        try await answerer.setLocalDescription(answer)
        let rids = try #require(answerer.transceivers.first).receiveRIDs
        await answerer.close()
        return (try #require(try SDP.SessionDescription(parsing: answer.sdp).media.first), rids)
    }

    @Test func theRelaysAnswerTakesTheLayersInTheOffersOrder() async throws {
        let (video, rids) = try await answer(receiveSimulcast: true)
        #expect(video.rids == ["l", "m", "h"].map { RID(id: $0, direction: .recv) })
        #expect(video.simulcast?.attributeValue == "recv l;m;h")
        #expect(Set(video.extMaps.map(\.uri)).isSuperset(of: ["urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
                                                              "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"]))
        #expect(rids == ["l", "m", "h"])
    }

    @Test func aDecodingPeerDeclinesIt() async throws {
        let (video, rids) = try await answer(receiveSimulcast: false)
        #expect(video.rids.isEmpty && video.simulcast == nil && rids.isEmpty)
        #expect(!video.extMaps.contains { $0.uri.contains("rtp-stream-id") })
    }
}
