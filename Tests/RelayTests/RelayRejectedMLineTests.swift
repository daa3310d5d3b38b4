import Foundation
import HTTP
import PeerConnection
import SDP
import STUN
import Testing
import Transport
@testable import Relay

/// A stream without audio played by a player that offers audio first (as the /players/ page and
/// browsers do): the relay rejects the audio m-line (port 0, no transport attributes) and takes
/// its DTLS role from the live video section. Reading the rejected one made the relay a DTLS
/// client too, and Chromium failed at once ("unexpected message"); our own player made the same
/// mistake the other way round (server), so Swift to Swift connected by accident.
@Suite(.serialized) struct RelayRejectedMLineTests {
    let http = HTTPClient(timeout: .seconds(20))

    func peer(_ name: String) throws -> PeerConnection {
        var config = PeerConnection.Configuration()
        config.interfaceAddresses = [SocketAddress(host: "127.0.0.1", port: 0)].compactMap { $0 }
        return try PeerConnection(configuration: config, loop: EventLoop(name: name))
    }

    func exchange(_ pc: PeerConnection, _ url: String) async throws -> String {
        try await pc.setLocalDescription(try await pc.createOffer())
        await pc.waitForGatheringComplete()
        let r = try await http.send(method: "POST", url: url, headers: ["Content-Type": "application/sdp"],
                                    body: Array(try #require(pc.localDescription).sdp.utf8))
        #expect(r.status == 201, "\(r.status) \(r.text)")
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: r.text))
        return r.text
    }

    @Test func videoOnlyStreamPlaysToAnAudioFirstPlayer() async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, log: { _ in })
        let publisher = try peer("pub")
        _ = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        _ = try await exchange(publisher, "\(relay.url)/rtc/v1/whip/?app=live&stream=novoice")
        try await publisher.waitConnected(timeout: .seconds(10))

        let player = try peer("play")
        _ = try await player.addTransceiver(.audio, TransceiverInit(direction: .recvonly))
        _ = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
        let answer = try SDP.SessionDescription(parsing: try await exchange(player, "\(relay.url)/rtc/v1/whep/?app=live&stream=novoice"))
        #expect(answer.media.first?.port == 0, "the audio m-line is rejected")
        #expect(answer.media.first?.setup == nil && answer.media.last?.setup == .passive)
        try await player.waitConnected(timeout: .seconds(10))   // DTLS: client and server, not two clients
        #expect(player.connectionState == .connected)
        // The answer said passive: the player is the DTLS client, as a browser would be.
        let transport = await player.getStats().ofType("transport").first
        #expect(transport?["dtlsRole"] == .string("client"))
        await player.close()
        await publisher.close()
        await relay.stop()
    }
}
