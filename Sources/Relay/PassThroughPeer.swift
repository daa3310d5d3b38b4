import PeerConnection
import STUN
import Transport

/// A server-side PeerConnection that forwards RTP without decoding it: ICE-lite, DTLS passive
/// (`a=setup:passive`, as SRS answers), on the shared UDP port.
func makePassThroughPeer(loop: EventLoop, mux: any SharedSocket, direction: TransceiverDirection, advertised: SocketAddress? = nil,
                         audioCodecs: [RtpCodecCapability] = RtpCodecCapability.passThroughAudio,
                         videoCodecs: [RtpCodecCapability] = RtpCodecCapability.passThroughVideo,
                         codecOrder: CodecOrder = .offerer, transportCC: Bool = false, timingSeed: UInt64? = nil) throws -> PeerConnection {
    var config = passThroughConfiguration(direction: direction, audioCodecs: audioCodecs, videoCodecs: videoCodecs, codecOrder: codecOrder,
                                          transportCC: transportCC)
    config.timingSeed = timingSeed
    return try PeerConnection(configuration: config, loop: loop) { _, ufrag in
        SessionMuxEndpoint(mux: mux, ufrag: ufrag, advertised: advertised)
    }
}

/// The configuration of `makePassThroughPeer` (apart from its place on the mux).
func passThroughConfiguration(direction: TransceiverDirection, audioCodecs: [RtpCodecCapability] = RtpCodecCapability.passThroughAudio,
                              videoCodecs: [RtpCodecCapability] = RtpCodecCapability.passThroughVideo,
                              codecOrder: CodecOrder = .offerer, transportCC: Bool = false) -> PeerConnection.Configuration {
    var config = PeerConnection.Configuration()
    config.iceLite = true
    config.answererDTLSRole = .server
    config.mediaPipeline = false
    config.audioCodecs = audioCodecs
    config.videoCodecs = videoCodecs
    config.answerCodecOrder = codecOrder
    config.remoteTransceiverDirection = direction
    // Publishers get transport-cc feedback from us. A simulcast's players give it too
    // (`transportCC`, unless `--player-remb`): their layer follows a send-side estimate, whose
    // probes find a grown link in seconds. Other players send REMB: at 480 players the stamps,
    // feedback (20 a second per player) and 25 ms ticks cost the relay ~1.6× its CPU per
    // forwarded packet (bench/relay_ab.py --simulcast).
    config.transportWideCC = direction != .sendonly || transportCC
    // aiortc estimates its REMB only from abs-send-time.
    config.absSendTime = direction == .sendonly
    // A publisher's simulcast is taken: players get one layer each (RelayLayers.swift).
    config.receiveSimulcast = direction == .recvonly
    return config
}

/// One session's place on the shared mux, found by each local ufrag it had: an ICE restart
/// (a WHIP/WHEP PATCH, or a re-offer to the echo endpoint) gives the session new credentials,
/// and the peer's checks with the new ufrag must find it even from a new address. Old ufrags
/// stay routed until the session closes (the mux may know the peer's address through them).
final class SessionMuxEndpoint: UfragRoutedPacketIO {
    // Loop thread only, like the mux.
    private let mux: any SharedSocket
    private let advertised: SocketAddress?
    private var endpoints: [MuxEndpoint] = []
    /// The mux's socket, for batched fan-out sends (`UDPSendBatch`); kept, not looked up per packet.
    private(set) var batchSocket: UDPSocket?
    var onReceive: ((UnsafeRawBufferPointer, SocketAddress, SocketAddress) -> Delivery)?
    /// The endpoint whose datagram is being handled: a verified address is claimed through it.
    private var delivering: MuxEndpoint?

    init(mux: any SharedSocket, ufrag: String, advertised: SocketAddress?) {
        self.mux = mux
        self.advertised = advertised
        route(ufrag: ufrag)
    }

    func route(ufrag: String) {
        let endpoint = mux.endpoint(ufrag: ufrag, advertised: advertised)
        endpoint.onReceive = { [weak self, weak endpoint] bytes, from, local in
            guard let self else { return .refused }
            self.delivering = endpoint
            defer { self.delivering = nil }
            return self.onReceive?(bytes, from, local) ?? .refused
        }
        endpoints.append(endpoint)
        if batchSocket == nil { batchSocket = endpoint.batchSocket }
    }

    var localAddresses: [SocketAddress] { endpoints.first?.localAddresses ?? [] }

    @discardableResult
    func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool {
        endpoints.first?.send(bytes, from: local, to: remote) ?? false
    }

    func addressVerified(_ remote: SocketAddress) {
        (delivering ?? endpoints.last)?.addressVerified(remote)
    }

    func close() {
        for endpoint in endpoints { endpoint.close() }
        endpoints.removeAll()
        batchSocket = nil
        onReceive = nil
    }
}

/// PeerConnection's description (offer/answer and its text), named apart from the SDP module's
/// parsed one for files that import both.
typealias JSEPDescription = SessionDescription

/// Answers a remote offer and returns our full local description (candidates included: a lite
/// server has its one host candidate at once).
func answer(_ pc: PeerConnection, offer: String) async throws -> String {
    try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: offer))
    let answer = try await pc.createAnswer()
    try await pc.setLocalDescription(answer)
    await pc.waitForGatheringComplete(timeout: .seconds(2))
    guard let local = pc.localDescription else { throw PeerConnectionError(.invalidState, "no local description after answering") }
    return local.sdp
}
