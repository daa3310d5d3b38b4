import Media
import Relay
import SessionSupport
import Testing
@testable import PeerConnection

extension Simulation {
    /// WHIP/WHEP in process with the embedded relay: `pc`'s offer, as `edit` leaves it, POSTed to
    /// /rtc/v1/`endpoint`/ for live/`stream`, the answer set and the connection made. The answer.
    @discardableResult
    func exchange(_ pc: PeerConnection, with relay: RelayServer, endpoint: String, stream: String,
                  edit: (String) -> String = { $0 }) async throws -> String {
        try await pc.setLocalDescription(try await pc.createOffer())
        #expect(run { pc.iceGatheringState == .complete })
        let offer = edit(try #require(pc.localDescription).sdp)
        let response = await request(relay, "POST", "/rtc/v1/\(endpoint)/?app=live&stream=\(stream)", body: Array(offer.utf8),
                                     headers: ["Content-Type": "application/sdp"])
        let answer = String(decoding: response.body, as: UTF8.self)
        #expect(response.status == 201, "\(endpoint): \(response.status) \(answer)")
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: answer))
        try connect(pc)
        return answer
    }

    /// The embedded relay with an H.264 publisher on live/`stream` (WHIP, starting at full size)
    /// sending what `source` is given.
    func relayWithPublisher(stream: String) async throws
        -> (relay: RelayServer, publisher: PeerConnection, source: VideoSource, transceiver: RtpTransceiver) {
        let relay = try self.relay()
        let publisher = try peer(Simulation.fullSizeStart)
        let source = VideoSource()
        let t = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try await exchange(publisher, with: relay, endpoint: "whip", stream: stream)
        return (relay, publisher, source, t)
    }
}
