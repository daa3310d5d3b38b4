import Foundation
import ICE
import PeerConnection
import RTP
import STUN
import Testing
import TestSupport
import Transport

/// A PeerConnection on loopback only, with its own event loop.
func loopbackPeer(_ configure: (inout PeerConnection.Configuration) -> Void = { _ in }) throws -> PeerConnection {
    var config = PeerConnection.Configuration()
    config.interfaceAddresses = [SocketAddress(host: "127.0.0.1", port: 0)].compactMap { $0 }
    configure(&config)
    return try PeerConnection(configuration: config, loop: EventLoop(name: "test-pc"))
}

/// Offer/answer between two in-process peers, candidates carried inside the SDP.
func negotiate(_ offerer: PeerConnection, _ answerer: PeerConnection,
               editAnswer: (String) -> String = { $0 }) async throws {
    try await offerer.setLocalDescription(try await offerer.createOffer())
    await offerer.waitForGatheringComplete()
    try await answerer.setRemoteDescription(try #require(offerer.localDescription))
    try await answerer.setLocalDescription(try await answerer.createAnswer())
    await answerer.waitForGatheringComplete()
    let answer = try #require(answerer.localDescription)
    try await offerer.setRemoteDescription(SessionDescription(type: .answer, sdp: editAnswer(answer.sdp)))
}

/// Collects what a receiver gets, for assertions from the test task.
final class PacketLog: Sendable {
    private let packets = Monitor<[RTPPacket]>([])
    func append(_ p: RTPPacket) { packets.withLock { $0.append(p) } }
    var all: [RTPPacket] { packets.value }

    /// For the tests still on real sockets: until `count` packets arrived (each arrival wakes
    /// the wait; a timer only bounds a broken run), then what arrived. Tests on a `Simulation`
    /// run the loop until `all` holds enough and read it.
    func wait(for count: Int, timeout: Duration = .seconds(5)) async -> [RTPPacket] {
        _ = await packets.wait(until: { $0.count >= count }, timeout: timeout)
        return all
    }
}

/// The UDP address a peer advertises in its local description.
func advertisedAddress(_ pc: PeerConnection) throws -> SocketAddress {
    let sdp = try #require(pc.localDescription).sdp
    let line = try #require(sdp.split(separator: "\r\n").first { $0.hasPrefix("a=candidate:") })
    let candidate = try Candidate(parsing: String(line))
    return try #require(candidate.socketAddress)
}

/// For tests about something other than bandwidth: the start-up estimate (300 kbit/s until
/// feedback raises it) may not make the encoder skip frames or shrink them.
func encodeEveryFrame(_ sender: RtpSender) throws {
    try sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(minBitrate: 400_000)],
                                               degradationPreference: .maintainFramerate))
}
