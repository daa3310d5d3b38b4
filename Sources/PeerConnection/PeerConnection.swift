import DTLS
import ICE
import RTP
import SDP
import STUN
import Locks
import SeededRandom
import Transport

/// W3C `RTCPeerConnection`. Public methods may be called from any task; the protocol work runs
/// on one event-loop thread (`loop`), where every callback is delivered too.
public final class PeerConnection: @unchecked Sendable {
    // @unchecked: everything below `// loop state` is touched only on `loop`'s thread (public
    // methods hop there with `loop.submit`); cross-thread reads go through `snapshot`.
    public let configuration: Configuration
    public let loop: EventLoop
    /// Every event from the connection's creation on, in order (the newest 256 wait for a
    /// reader). One reader: an AsyncStream gives each element to one iterator. `StreamingSession`
    /// and `P2PCall` read their connection's stream themselves, leaving `delegate` to the app.
    public let events: AsyncStream<PeerConnectionEvent>
    /// The same events as method calls (the iOS SDK's `RTCPeerConnectionDelegate`), on the loop
    /// thread, each before it goes on `events`. Held weakly.
    public var delegate: (any PeerConnectionDelegate)? {
        get { snapshot.withLock { $0.delegate } }
        set { snapshot.withLock { $0.delegate = newValue } }
    }

    let continuation: AsyncStream<PeerConnectionEvent>.Continuation
    let snapshot = Locked(Snapshot())
    let ioFactory: PacketIOFactory
    let interfaceMonitorFactory: InterfaceMonitorFactory
    let iceServers: ResolvedIceServers

    // loop state
    let certificate: DTLSCertificate
    /// Our ICE credentials; an ICE restart replaces them (`pendingCredentials` until applied).
    var credentials = ICECredentials.random()
    var pendingCredentials: ICECredentials?
    let sessionID = UInt64.random(in: 1...(UInt64(1) << 62))
    var sessionVersion: UInt64 = 1
    let cname = randomToken(16)
    /// Draws for timing randomness (`Configuration.timingSeed`): one per consumer, in order.
    var timingSeeds: SplitMix64
    var transceiverList: [RtpTransceiver] = []
    var transport: MediaTransport?
    var media = MediaStreams()
    var localType: SdpType?
    var localSDP: SDP.SessionDescription?
    var remoteSDP: SDP.SessionDescription?
    var remoteType: SdpType?
    var localSetup = "actpass"
    var localCandidates: [Candidate] = []
    var pendingRemoteCandidates: [Candidate] = []
    var pendingEndOfCandidates = false
    var remoteCredentialsSet = false
    var iceState: IceConnectionState = .new
    /// Relay-only and no TURN allocation left: failed for good, whatever ICE says next.
    var relayFailed = false
    /// The connection state as the loop last set it (`connectionState` reads the snapshot).
    var loopConnectionState: PeerConnectionState = .new
    var bySSRC: [UInt32: RtpTransceiver] = [:]
    var byMid: [String: RtpTransceiver] = [:]
    var midExtensionID: UInt8?
    var unroutedRTP = 0
    /// RTX packets unwrapped, and those dropped (padding, unknown stream, malformed).
    var rtxReceived = 0, rtxDropped = 0
    var passThroughNacks = PassThroughNacks()
    var dataChannels = DataChannelSession()
    var negotiation = NegotiationState()
    /// `restartIce()` was called: the next offer carries new ICE credentials.
    var iceRestartWanted = false
    /// Armed while ICE is `disconnected` (`Configuration.iceRestartAfter`).
    var disconnectedRestartTimer: Int?
    var closed = false

    struct Snapshot {
        var signaling: SignalingState = .stable
        var ice: IceConnectionState = .new
        var connection: PeerConnectionState = .new
        var gathering: IceGatheringState = .new
        var localDescription: SessionDescription?
        var remoteDescription: SessionDescription?
        var transceivers: [RtpTransceiver] = []
        var selectedPair: (local: String, remote: String)?
        var dtlsState = DtlsTransportState.new
        var failure: String?
        weak var delegate: (any PeerConnectionDelegate)?
    }

    /// `packetIO` makes the datagram path (default: a socket per interface address);
    /// `interfaces` the monitor of the host's addresses for continual gathering (default: the
    /// platform's — netlink on Linux — on a threaded loop; a test's `VirtualHost` on a simulated one).
    public init(configuration: Configuration = Configuration(), loop: EventLoop = .shared,
                packetIO: PacketIOFactory? = nil, interfaces: InterfaceMonitorFactory? = nil) throws {
        self.configuration = configuration
        self.loop = loop
        self.timingSeeds = SplitMix64(seed: configuration.timingSeed ?? UInt64.random(in: 0...UInt64.max))
        self.certificate = try configuration.certificate ?? DTLSCertificate.generate()
        self.ioFactory = packetIO ?? defaultPacketIO(addresses: configuration.interfaceAddresses)
        self.interfaceMonitorFactory = interfaces ?? systemInterfaceMonitor
        self.iceServers = try resolveIceServers(configuration.iceServers)
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    // MARK: read-only state (any thread)

    public var signalingState: SignalingState { snapshot.withLock { $0.signaling } }
    public var iceConnectionState: IceConnectionState { snapshot.withLock { $0.ice } }
    /// W3C `connectionState`: ICE and DTLS together.
    public var connectionState: PeerConnectionState { snapshot.withLock { $0.connection } }
    public var iceGatheringState: IceGatheringState { snapshot.withLock { $0.gathering } }
    public var transceivers: [RtpTransceiver] { snapshot.withLock { $0.transceivers } }
    public var remoteDescription: SessionDescription? { snapshot.withLock { $0.remoteDescription } }
    /// Our description with every candidate gathered so far (like the W3C attribute).
    public var localDescription: SessionDescription? { snapshot.withLock { $0.localDescription } }
    public var selectedCandidatePair: (local: String, remote: String)? { snapshot.withLock { $0.selectedPair } }
    /// W3C `RTCDtlsTransport.state` of the connection's (bundled) transport.
    public var dtlsState: DtlsTransportState { snapshot.withLock { $0.dtlsState } }
    /// Our certificate's fingerprint as it appears in our SDP.
    public var fingerprint: DTLS.Fingerprint { certificate.fingerprint }

    // MARK: transceivers

    /// W3C `addTransceiver(kind, init)`.
    @discardableResult
    public func addTransceiver(_ kind: MediaKind, _ options: TransceiverInit = TransceiverInit(),
                               codecs: [RtpCodecCapability]? = nil) async throws -> RtpTransceiver {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError(.closed, "addTransceiver: the connection is closed") }
            if !options.sendEncodings.isEmpty {
                try RtpSendParameters(encodings: options.sendEncodings).validate("addTransceiver sendEncodings")
                guard kind == .video || options.sendEncodings.count == 1 else {
                    throw PeerConnectionError(.invalidArgument, "addTransceiver sendEncodings: simulcast is for video")
                }
            }
            return makeTransceiver(kind, options, codecs: codecs)
        }
    }

    func makeTransceiver(_ kind: MediaKind, _ options: TransceiverInit, codecs: [RtpCodecCapability]?) -> RtpTransceiver {
        var ssrc = UInt32.random(in: 1...UInt32.max)
        while transceiverList.contains(where: { $0.sender.layer(ssrc: ssrc) != nil }) { ssrc = UInt32.random(in: 1...UInt32.max) }
        let list = codecs ?? (kind == .audio ? configuration.audioCodecs : configuration.videoCodecs)
        let t = RtpTransceiver(kind: kind, init: options, codecs: list, ssrc: ssrc, cname: cname, loop: loop)
        transceiverList.append(t)
        snapshot.withLock { $0.transceivers = transceiverList }
        t.onNegotiationChange = { [weak self] in self?.updateNegotiationNeeded() }
        updateNegotiationNeeded()
        return t
    }

    /// Waits until ICE gathering is complete (for peers without trickle, such as WHIP servers).
    public func waitForGatheringComplete(timeout: Duration = .seconds(10)) async {
        _ = await firstEvent(timeout: timeout, current: { [self] in
            snapshot.withLock { $0.gathering } == .complete ? .iceGatheringStateChanged(.complete) : nil
        }, match: { if case .iceGatheringStateChanged(.complete) = $0 { return true }; return false })
    }

    /// Waits for the connection state to be `connected`; throws if it fails, closes or times out first.
    public func waitConnected(timeout: Duration = .seconds(30)) async throws {
        let terminal: @Sendable (PeerConnectionState) -> Bool = { $0 == .connected || $0 == .failed || $0 == .closed }
        let event = await firstEvent(timeout: timeout, current: { [self] in
            terminal(loopConnectionState) ? .connectionStateChanged(loopConnectionState) : nil
        }, match: { if case .connectionStateChanged(let s) = $0 { return terminal(s) }; return false })
        switch event {
        case .connectionStateChanged(.connected): return
        case .connectionStateChanged(.failed):
            throw PeerConnectionError(.transport, "connection failed" + (snapshot.withLock { $0.failure }.map { ": \($0)" } ?? ""))
        case .connectionStateChanged(.closed): throw PeerConnectionError(.closed, "connection closed before it connected")
        default: throw PeerConnectionError(.timeout, "not connected after \(timeout) (ICE \(iceConnectionState.rawValue), DTLS \(dtlsState.rawValue))")
        }
    }

    /// The first event that `match`es, or the `current` one if it already holds; nil on timeout or close.
    func firstEvent(timeout: Duration, current: @escaping @Sendable () -> PeerConnectionEvent?,
                            match: @escaping @Sendable (PeerConnectionEvent) -> Bool) async -> PeerConnectionEvent? {
        let (stream, cont) = AsyncStream.makeStream(of: PeerConnectionEvent.self)
        loop.execute { [self] in
            if let event = current() {
                cont.yield(event)
                cont.finish()
                return
            }
            if closed {
                cont.finish()
                return
            }
            waiters.append((match, cont))
            loop.schedule(at: loop.now.advanced(by: timeout)) { cont.finish() }
        }
        for await event in stream { return event }
        return nil
    }

    var waiters: [(match: @Sendable (PeerConnectionEvent) -> Bool, cont: AsyncStream<PeerConnectionEvent>.Continuation)] = []

    /// Sends a compound RTCP packet (feedback, reports) on the connection.
    public func sendRTCP(_ packets: [RTCPPacket]) {
        transport?.sendRTCP(RTCPPacket.serializeCompound(packets))
    }

    /// W3C `close()`: stops ICE, sends DTLS close_notify, closes sockets.
    /// Returns once the sockets are closed: with TURN allocations, after the servers answered
    /// their release (at most a second), so nothing is left running when a process exits.
    public func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                shutDown()
                if let transport { transport.whenSocketsClosed { done.resume() } } else { done.resume() }
            }
        }
    }

    func shutDown() {
        guard !closed else { return }
        stopMediaStreams()
        transport?.close()
        closeDataChannels()
        closed = true
        // W3C close(): the DTLS transport is closed too.
        if transport != nil { snapshot.withLock { $0.dtlsState = .closed } }
        setIce(.closed)
        setConnection(.closed)
        setSignaling(.closed)
        continuation.finish()
        for w in waiters { w.cont.finish() }
        waiters.removeAll()
    }

    deinit {
        continuation.finish()
    }

    // MARK: state bookkeeping (loop thread)

    func publishLocalDescription() {
        guard let localType else { return }
        let sections = localSDP.map(reparseSections) ?? []
        let text = writeSDP(sessionParameters(), sections: sections, bundle: true)
        snapshot.withLock { $0.localDescription = SessionDescription(type: localType, sdp: text) }
    }

    /// Our applied description's m-lines, to re-emit with the candidates gathered since.
    func reparseSections(_ sdp: SDP.SessionDescription) -> [LocalMediaSection] {
        sdp.media.enumerated().map { index, m in
            let mid = m.mid ?? String(index)
            let t = transceiverList.first(where: { $0.mid == mid })
            return LocalMediaSection(
                kind: m.kind, mid: mid, rejected: m.port == 0, proto: m.proto,
                direction: TransceiverDirection(rawValue: m.direction.rawValue) ?? .sendrecv,
                codecs: m.codecs.map { c in
                    RtpCodecParameters(payloadType: c.payloadType, mimeType: "\(m.kind)/\(c.name)", clockRate: c.clockRate,
                                       channels: c.channels, sdpFmtpLine: c.fmtp,
                                       rtcpFeedback: c.feedback.map { RtcpFeedback(type: $0.type, parameter: $0.parameter) })
                },
                extensions: m.extMaps.map { (id: $0.id, uri: $0.uri) }, sender: t?.sender, rawFormats: m.formats,
                rids: m.rids, simulcast: m.simulcast)
        }
    }

    func updateConnectionState() {
        guard !closed, let transport else { return }
        let dtls = transport.dtlsState
        snapshot.withLock { $0.dtlsState = DtlsTransportState(dtls) }
        let next: PeerConnectionState
        if iceState == .failed || dtls == .failed || relayFailed {
            next = .failed
        } else if iceState == .disconnected {
            next = .disconnected
        } else if (iceState == .connected || iceState == .completed) && dtls == .connected {
            next = .connected
        } else if dtls == .closed {
            next = .closed
        } else if iceState == .new && dtls == .new {
            next = .new
        } else {
            next = .connecting
        }
        setConnection(next)
    }

    func setSignaling(_ s: SignalingState) {
        guard snapshot.withLock({ $0.signaling }) != s else { return }
        snapshot.withLock { $0.signaling = s }
        emit(.signalingStateChanged(s))
    }

    func setGathering(_ s: IceGatheringState) {
        guard snapshot.withLock({ $0.gathering }) != s else { return }
        snapshot.withLock { $0.gathering = s }
        emit(.iceGatheringStateChanged(s))
    }

    func setIce(_ s: IceConnectionState) {
        guard iceState != s else { return }
        iceState = s
        snapshot.withLock { $0.ice = s }
        emit(.iceConnectionStateChanged(s))
    }

    func setConnection(_ s: PeerConnectionState) {
        guard loopConnectionState != s else { return }
        loopConnectionState = s
        snapshot.withLock { $0.connection = s }
        emit(.connectionStateChanged(s))
    }

    func emit(_ event: PeerConnectionEvent) {
        if let delegate = snapshot.withLock({ $0.delegate }) { event.deliver(to: delegate, from: self) }
        continuation.yield(event)
        waiters.removeAll { w in
            guard w.match(event) else { return false }
            w.cont.yield(event)
            w.cont.finish()
            return true
        }
    }

    /// Transport counters for diagnostics and tests: what was received, sent, and dropped at
    /// each layer (malformed RTP/RTCP, SRTP failures, STUN and DTLS garbage).
    public func transportStatistics() async -> [String: Int] {
        (try? await loop.submit { [self] () -> [String: Int] in
            guard let transport else { return [:] }
            let c = transport.counters, ice = transport.ice.stats, dtls = transport.dtls?.stats
            let turn = transport.relays.map(\.client.stats)
            return [
                "turnChannelDataSent": turn.reduce(0) { $0 + $1.channelDataSent },
                "turnChannelDataReceived": turn.reduce(0) { $0 + $1.channelDataReceived },
                "turnIndicationsSent": turn.reduce(0) { $0 + $1.indicationsSent },
                "turnIndicationsReceived": turn.reduce(0) { $0 + $1.indicationsReceived },
                "turnGarbage": turn.reduce(0) { $0 + $1.garbage },
                "turnAllocationsOverTCP": transport.relays.filter { $0.client.configuration.transport == .tcp }.count,
                "turnAllocationsOverTLS": transport.relays.filter { $0.client.configuration.transport == .tls }.count,
                "rtpReceived": c.rtpReceived, "rtcpReceived": c.rtcpReceived, "rtpSent": c.rtpSent, "rtcpSent": c.rtcpSent,
                "malformedRTP": c.malformedRTP, "malformedRTCP": c.malformedRTCP, "srtpErrors": c.srtpErrors,
                "unknownDatagrams": c.unknownDatagrams, "mediaBeforeKeys": c.mediaBeforeKeys, "unroutedRTP": unroutedRTP,
                "unverifiedDatagrams": c.unverifiedDatagrams, "sendsWithoutPath": c.sendsWithoutPath, "remoteCandidatesRefused": ice.refusedRemoteCandidates,
                "stunGarbage": ice.droppedGarbage, "stunBadIntegrity": ice.droppedBadIntegrity,
                "stunBadFingerprint": ice.droppedBadFingerprint, "stunUnauthorized": ice.droppedUnauthorized,
                "dtlsDroppedRecords": dtls?.droppedRecords ?? 0,
            ]
        }) ?? [:]
    }
}

func randomToken(_ count: Int) -> String {
    let chars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    return String((0..<count).map { _ in chars[Int.random(in: 0..<chars.count)] })
}
