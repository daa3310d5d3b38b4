import PeerConnection
import STUN
import Transport

/// A server-side PeerConnection that forwards RTP without decoding it: ICE-lite, DTLS passive
/// (`a=setup:passive`, as SRS answers), on the shared UDP port.
func makePassThroughPeer(loop: EventLoop, mux: UDPMux, direction: TransceiverDirection, advertised: SocketAddress? = nil,
                         audioCodecs: [RtpCodecCapability] = RtpCodecCapability.passThroughAudio,
                         videoCodecs: [RtpCodecCapability] = RtpCodecCapability.passThroughVideo,
                         codecOrder: CodecOrder = .offerer) throws -> PeerConnection {
    var config = PeerConnection.Configuration()
    config.iceLite = true
    config.answererDTLSRole = .server
    config.mediaPipeline = false
    config.audioCodecs = audioCodecs
    config.videoCodecs = videoCodecs
    config.answerCodecOrder = codecOrder
    config.remoteTransceiverDirection = direction
    // Publishers get transport-cc feedback from us; towards players nothing could use a
    // per-player estimate, and at 480 players its stamps, feedback and timers were ~20% of
    // the relay's CPU.
    config.transportWideCC = direction != .sendonly
    return try PeerConnection(configuration: config, loop: loop) { _, ufrag in mux.endpoint(ufrag: ufrag, advertised: advertised) }
}

/// Answers a remote offer and returns our full local description (candidates included: a lite
/// server has its one host candidate at once).
func answer(_ pc: PeerConnection, offer: String) async throws -> String {
    try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: offer))
    let answer = try await pc.createAnswer()
    try await pc.setLocalDescription(answer)
    await pc.waitForGatheringComplete(timeout: .seconds(2))
    guard let local = pc.localDescription else { throw PeerConnectionError("no local description after answering") }
    return local.sdp
}
