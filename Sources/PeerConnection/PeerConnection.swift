import DTLS
import ICE
import RTP
import SDP
import STUN
import Synchronization
import Transport

/// W3C `RTCPeerConnection`. Public methods may be called from any task; the protocol work runs
/// on one event-loop thread (`loop`), where every callback is delivered too.
public final class PeerConnection: @unchecked Sendable {
    // @unchecked: everything below `// loop state` is touched only on `loop`'s thread (public
    // methods hop there with `loop.submit`); cross-thread reads go through `snapshot`.
    public let configuration: Configuration
    public let loop: EventLoop
    public let events: AsyncStream<PeerConnectionEvent>
    /// Called on the loop thread for each event, before it is put on `events`.
    public var onEvent: (@Sendable (PeerConnectionEvent) -> Void)? {
        get { snapshot.withLock { $0.onEvent } }
        set { snapshot.withLock { $0.onEvent = newValue } }
    }

    private let continuation: AsyncStream<PeerConnectionEvent>.Continuation
    private let snapshot = Mutex(Snapshot())
    private let ioFactory: PacketIOFactory

    // loop state
    private let certificate: DTLSCertificate
    private let credentials = ICECredentials.random()
    private let sessionID = UInt64.random(in: 1...(UInt64(1) << 62))
    private var sessionVersion: UInt64 = 1
    private let cname = randomToken(16)
    var transceiverList: [RtpTransceiver] = []
    var transport: MediaTransport?
    var media = MediaStreams()
    private var localType: SdpType?
    private var localSDP: SDP.SessionDescription?
    private var remoteSDP: SDP.SessionDescription?
    private var remoteType: SdpType?
    private var localSetup = "actpass"
    private var localCandidates: [Candidate] = []
    private var pendingRemoteCandidates: [Candidate] = []
    private var remoteCredentialsSet = false
    private var iceState: IceConnectionState = .new
    private var connectionState: PeerConnectionState = .new
    private var bySSRC: [UInt32: RtpTransceiver] = [:]
    private var byMid: [String: RtpTransceiver] = [:]
    private var midExtensionID: UInt8?
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
        var dtlsState = "new"
        var failure: String?
        var onEvent: (@Sendable (PeerConnectionEvent) -> Void)?
    }

    public init(configuration: Configuration = Configuration(), loop: EventLoop = .shared,
                packetIO: PacketIOFactory? = nil) throws {
        self.configuration = configuration
        self.loop = loop
        self.certificate = try configuration.certificate ?? DTLSCertificate.generate()
        self.ioFactory = packetIO ?? defaultPacketIO(addresses: configuration.interfaceAddresses)
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    // MARK: read-only state (any thread)

    public var signalingState: SignalingState { snapshot.withLock { $0.signaling } }
    public var iceConnectionState: IceConnectionState { snapshot.withLock { $0.ice } }
    public var peerConnectionState: PeerConnectionState { snapshot.withLock { $0.connection } }
    public var iceGatheringState: IceGatheringState { snapshot.withLock { $0.gathering } }
    public var transceivers: [RtpTransceiver] { snapshot.withLock { $0.transceivers } }
    public var remoteDescription: SessionDescription? { snapshot.withLock { $0.remoteDescription } }
    /// Our description with every candidate gathered so far (like the W3C attribute).
    public var localDescription: SessionDescription? { snapshot.withLock { $0.localDescription } }
    public var selectedCandidatePair: (local: String, remote: String)? { snapshot.withLock { $0.selectedPair } }
    public var dtlsState: String { snapshot.withLock { $0.dtlsState } }
    /// Our certificate's fingerprint as it appears in our SDP.
    public var fingerprint: DTLS.Fingerprint { certificate.fingerprint }

    // MARK: transceivers

    /// W3C `addTransceiver(kind, init)`.
    @discardableResult
    public func addTransceiver(_ kind: MediaKind, _ options: TransceiverInit = TransceiverInit(),
                               codecs: [RtpCodecCapability]? = nil) async throws -> RtpTransceiver {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError("addTransceiver: the connection is closed") }
            return makeTransceiver(kind, options, codecs: codecs)
        }
    }

    private func makeTransceiver(_ kind: MediaKind, _ options: TransceiverInit, codecs: [RtpCodecCapability]?) -> RtpTransceiver {
        var ssrc = UInt32.random(in: 1...UInt32.max)
        while transceiverList.contains(where: { $0.sender.ssrc == ssrc }) { ssrc = UInt32.random(in: 1...UInt32.max) }
        let list = codecs ?? (kind == .audio ? configuration.audioCodecs : configuration.videoCodecs)
        let t = RtpTransceiver(kind: kind, init: options, codecs: list, ssrc: ssrc, cname: cname)
        transceiverList.append(t)
        snapshot.withLock { $0.transceivers = transceiverList }
        return t
    }

    // MARK: offer / answer

    /// W3C `createOffer()`.
    public func createOffer() async throws -> SessionDescription {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError("createOffer: the connection is closed") }
            var used = Set(transceiverList.compactMap(\.mid))
            var next = 0
            for t in transceiverList where t.mid == nil {
                while used.contains(String(next)) { next += 1 }
                t.mid = String(next)
                used.insert(String(next))
            }
            let sections = transceiverList.map { t -> LocalMediaSection in
                var pts = Set<UInt8>()
                let codecs = t.codecCapabilities.map { cap -> RtpCodecParameters in
                    var pt = cap.preferredPayloadType
                    while pts.contains(pt) { pt = pt >= 127 ? 96 : pt + 1 }
                    pts.insert(pt)
                    return RtpCodecParameters(payloadType: pt, mimeType: cap.mimeType, clockRate: cap.clockRate,
                                              channels: cap.channels, sdpFmtpLine: cap.sdpFmtpLine, rtcpFeedback: cap.rtcpFeedback)
                }
                return LocalMediaSection(kind: t.kind.rawValue, mid: t.mid ?? "0", rejected: false, proto: "UDP/TLS/RTP/SAVPF",
                                         direction: t.direction, codecs: codecs,
                                         extensions: [(1, RTPExtensionURI.sdesMID)], sender: t.sender)
            }
            localSetup = "actpass"
            return SessionDescription(type: .offer, sdp: writeSDP(sessionParameters(), sections: sections, bundle: true))
        }
    }

    /// W3C `createAnswer()`: answers the remote offer with what our transceivers can do.
    public func createAnswer() async throws -> SessionDescription {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError("createAnswer: the connection is closed") }
            guard remoteType == .offer, let offer = remoteSDP else {
                throw PeerConnectionError("createAnswer: there is no remote offer")
            }
            localSetup = configuration.answererDTLSRole == .client ? "active" : "passive"
            if offer.media.first.flatMap({ $0.setup ?? offer.setup }) == .active { localSetup = "passive" }
            if offer.media.first.flatMap({ $0.setup ?? offer.setup }) == .passive { localSetup = "active" }
            let sections = offer.media.enumerated().map { index, m in answerSection(for: m, index: index) }
            return SessionDescription(type: .answer, sdp: writeSDP(sessionParameters(), sections: sections, bundle: true))
        }
    }

    private func answerSection(for m: MediaDescription, index: Int) -> LocalMediaSection {
        let mid = m.mid ?? String(index)
        let reject = LocalMediaSection(kind: m.kind, mid: mid, rejected: true, proto: m.proto, direction: .inactive,
                                       codecs: [], extensions: [], sender: nil, rawFormats: m.formats)
        guard m.port != 0, let t = transceiverList.first(where: { $0.mid == mid }) else { return reject }
        var chosen: [RtpCodecParameters] = []
        for cap in t.codecCapabilities {
            for offered in m.codecs where cap.matches(offered) && !chosen.contains(where: { $0.payloadType == offered.payloadType }) {
                let feedback = offered.feedback.compactMap { fb -> RtcpFeedback? in
                    let f = RtcpFeedback(type: fb.type, parameter: fb.parameter)
                    return cap.rtcpFeedback.contains(f) ? f : nil
                }
                chosen.append(RtpCodecParameters(payloadType: offered.payloadType, mimeType: cap.mimeType,
                                                 clockRate: offered.clockRate, channels: offered.channels,
                                                 sdpFmtpLine: offered.fmtp, rtcpFeedback: feedback))
            }
        }
        guard !chosen.isEmpty else { return reject }
        let remoteDirection = TransceiverDirection(rawValue: m.direction.rawValue) ?? .sendrecv
        let direction = t.direction.intersection(remoteDirection.reversed)
        let extensions = m.extMaps.filter { $0.uri == RTPExtensionURI.sdesMID }.map { (id: $0.id, uri: $0.uri) }
        return LocalMediaSection(kind: m.kind, mid: mid, rejected: false, proto: m.proto, direction: direction,
                                 codecs: chosen, extensions: extensions, sender: t.sender)
    }

    private func sessionParameters() -> LocalSessionParameters {
        let fp = certificate.fingerprint
        return LocalSessionParameters(
            sessionID: sessionID, sessionVersion: sessionVersion, ufrag: credentials.ufrag, pwd: credentials.pwd,
            fingerprint: (fp.algorithm, fp.value), setup: localSetup, iceLite: configuration.iceLite,
            candidates: localCandidates.map(\.attributeValue),
            gatheringComplete: snapshot.withLock { $0.gathering } == .complete,
            trickle: configuration.trickle && !configuration.iceLite)
    }

    /// W3C `setLocalDescription(description)`. Starts gathering on the first call.
    public func setLocalDescription(_ description: SessionDescription) async throws {
        try await loop.submit { [self] in try applyLocal(description) }
    }

    /// W3C `setRemoteDescription(description)`. Malformed SDP throws with the line number.
    public func setRemoteDescription(_ description: SessionDescription) async throws {
        try await loop.submit { [self] in try applyRemote(description) }
    }

    private func applyLocal(_ description: SessionDescription) throws {
        guard !closed else { throw PeerConnectionError("setLocalDescription: the connection is closed") }
        let parsed: SDP.SessionDescription
        do { parsed = try SDP.SessionDescription(parsing: description.sdp) } catch {
            throw PeerConnectionError("setLocalDescription: \(error)")
        }
        switch (description.type, signalingState) {
        case (.offer, .stable), (.offer, .haveLocalOffer): setSignaling(.haveLocalOffer)
        case (.answer, .haveRemoteOffer), (.pranswer, .haveRemoteOffer): setSignaling(.stable)
        default:
            throw PeerConnectionError("setLocalDescription: cannot apply a local \(description.type.rawValue) in state \(signalingState.rawValue)")
        }
        localSDP = parsed
        localType = description.type
        sessionVersion += 1
        if transport == nil { try startTransport(controlling: description.type == .offer) }
        if description.type == .answer { try finishNegotiation(local: parsed, remote: remoteSDP, localIsOffer: false) }
        publishLocalDescription()
    }

    private func applyRemote(_ description: SessionDescription) throws {
        guard !closed else { throw PeerConnectionError("setRemoteDescription: the connection is closed") }
        let parsed: SDP.SessionDescription
        do { parsed = try SDP.SessionDescription(parsing: description.sdp) } catch {
            throw PeerConnectionError("setRemoteDescription: \(error)")
        }
        try validateRemote(parsed)
        switch (description.type, signalingState) {
        case (.offer, .stable), (.offer, .haveRemoteOffer):
            setSignaling(.haveRemoteOffer)
            for (index, m) in parsed.media.enumerated() where m.kind == "audio" || m.kind == "video" {
                let mid = m.mid ?? String(index)
                if !transceiverList.contains(where: { $0.mid == mid }) {
                    // A new m-line gets a transceiver like W3C's "recvonly" one; the app may widen it.
                    let t = makeTransceiver(m.kind == "audio" ? .audio : .video, TransceiverInit(direction: configuration.remoteTransceiverDirection), codecs: nil)
                    t.mid = mid
                }
            }
        case (.answer, .haveLocalOffer), (.pranswer, .haveLocalOffer):
            setSignaling(.stable)
        default:
            throw PeerConnectionError("setRemoteDescription: cannot apply a remote \(description.type.rawValue) in state \(signalingState.rawValue)")
        }
        remoteSDP = parsed
        remoteType = description.type
        snapshot.withLock { $0.remoteDescription = description }
        if description.type == .answer || description.type == .pranswer, let localSDP {
            try finishNegotiation(local: localSDP, remote: parsed, localIsOffer: true)
        }
    }

    /// What every remote description must carry for our transport, checked before anything changes.
    private func validateRemote(_ sdp: SDP.SessionDescription) throws {
        guard let first = sdp.media.first(where: { $0.port != 0 }) ?? sdp.media.first else {
            throw PeerConnectionError("setRemoteDescription: the description has no m= line")
        }
        guard (first.iceUfrag ?? sdp.iceUfrag) != nil, (first.icePwd ?? sdp.icePwd) != nil else {
            throw PeerConnectionError("setRemoteDescription: m-line \(first.mid ?? "0") has no a=ice-ufrag/a=ice-pwd")
        }
        guard (first.fingerprint ?? sdp.fingerprint) != nil else {
            throw PeerConnectionError("setRemoteDescription: m-line \(first.mid ?? "0") has no a=fingerprint (DTLS is required)")
        }
        for m in sdp.media where m.port != 0 && m.kind != "application" && !m.proto.contains("SAVPF") && !m.proto.contains("SAVP") {
            throw PeerConnectionError("setRemoteDescription: m-line \(m.mid ?? "?") uses \(m.proto); only UDP/TLS/RTP/SAVPF is supported")
        }
    }

    private func startTransport(controlling: Bool) throws {
        let io: PacketIO
        do { io = try ioFactory(loop, credentials.ufrag) } catch {
            throw PeerConnectionError("cannot open the transport: \(error)")
        }
        var iceConfig = ICEConfiguration()
        iceConfig.lite = configuration.iceLite
        iceConfig.stunServers = stunServerAddresses(configuration.iceServers)
        let role: ICERole = configuration.iceLite ? .controlled : (controlling ? .controlling : .controlled)
        let agent = ICEAgent(role: role, local: credentials, configuration: iceConfig)
        let t = MediaTransport(loop: loop, io: io, ice: agent, certificate: certificate, srtpBackend: configuration.srtpBackend)
        transport = t
        t.onIceEvent = { [unowned self] in handleIce($0) }
        t.onDTLSConnected = { [unowned self] _ in updateConnectionState() }
        t.onDTLSFailed = { [unowned self] reason in
            snapshot.withLock { $0.failure = reason }
            emit(.error(reason))
            updateConnectionState()
        }
        t.onDTLSClosed = { [unowned self] in updateConnectionState() }
        t.onRTP = { [unowned self] packet, size in route(packet, size: size) }
        t.onRTCP = { [unowned self] packets in route(packets) }
        setGathering(.gathering)
        t.gather()
        for c in pendingRemoteCandidates { agent.addRemoteCandidate(c, now: .now) }
        pendingRemoteCandidates.removeAll()
        t.pump()
    }

    private func finishNegotiation(local: SDP.SessionDescription, remote: SDP.SessionDescription?, localIsOffer: Bool) throws {
        guard let remote, let transport else { return }
        let answer = localIsOffer ? remote : local
        let offer = localIsOffer ? local : remote
        // Transceivers: negotiated codecs, direction, mid extension, remote SSRCs.
        midExtensionID = nil
        for (index, m) in answer.media.enumerated() {
            let mid = m.mid ?? String(index)
            guard let t = transceiverList.first(where: { $0.mid == mid }) else { continue }
            t.mLineIndex = index
            byMid[mid] = t
            if m.port == 0 {
                t.currentDirection = .inactive
                t.negotiatedCodecs = []
                continue
            }
            t.negotiatedCodecs = m.codecs.map { c in
                RtpCodecParameters(payloadType: c.payloadType, mimeType: "\(m.kind)/\(c.name)", clockRate: c.clockRate,
                                   channels: c.channels, sdpFmtpLine: c.fmtp,
                                   rtcpFeedback: c.feedback.map { RtcpFeedback(type: $0.type, parameter: $0.parameter) })
            }
            let answerDirection = TransceiverDirection(rawValue: m.direction.rawValue) ?? .sendrecv
            t.currentDirection = localIsOffer ? answerDirection.reversed : answerDirection
            if let ext = m.extMaps.first(where: { $0.uri == RTPExtensionURI.sdesMID }), (1...255).contains(ext.id) {
                midExtensionID = UInt8(ext.id)
            }
            t.sender.transport = transport
            t.sender.mid = mid
        }
        for t in transceiverList { t.sender.midExtensionID = midExtensionID }
        for (index, m) in remote.media.enumerated() {
            let mid = m.mid ?? String(index)
            guard let t = byMid[mid] else { continue }
            for s in m.ssrcs { bySSRC[s.ssrc] = t }
        }
        // ICE: remote credentials and candidates (BUNDLE: the first live m-line's transport).
        let first = remote.media.first(where: { $0.port != 0 }) ?? remote.media.first
        if !remoteCredentialsSet, let ufrag = first?.iceUfrag ?? remote.iceUfrag, let pwd = first?.icePwd ?? remote.icePwd {
            transport.ice.setRemoteCredentials(ICECredentials(ufrag: ufrag, pwd: pwd), remoteIsLite: remote.iceLite, now: .now)
            remoteCredentialsSet = true
        }
        var ended = false
        for m in remote.media {
            for text in m.candidates {
                if let c = try? Candidate(parsing: text) { transport.ice.addRemoteCandidate(c, now: .now) }
            }
            ended = ended || m.endOfCandidates
        }
        if ended { transport.ice.endOfRemoteCandidates(now: .now) }
        // DTLS: role from a=setup, fingerprints from the remote.
        let offerSetup = (offer.media.first?.setup ?? offer.setup) ?? .actpass
        let answerSetup = (answer.media.first?.setup ?? answer.setup) ?? .active
        let weAreOfferer = localIsOffer
        let role: DTLSRole
        switch (offerSetup, answerSetup) {
        case (_, .active): role = weAreOfferer ? .server : .client
        case (_, .passive): role = weAreOfferer ? .client : .server
        default:
            throw PeerConnectionError("setRemoteDescription: the answer's a=setup must be active or passive")
        }
        startMediaStreams()
        let fingerprints = remote.media.compactMap(\.fingerprint) + [remote.fingerprint].compactMap { $0 }
        do {
            try transport.configureDTLS(role: role, remoteFingerprints: fingerprints.map {
                DTLS.Fingerprint(algorithm: $0.algorithm.lowercased(), value: $0.value.uppercased())
            })
        } catch {
            throw PeerConnectionError("DTLS set-up failed: \(error)")
        }
        updateConnectionState()
    }

    /// W3C `addIceCandidate`: a trickled remote candidate; an empty candidate ends them.
    public func addIceCandidate(_ candidate: IceCandidate) async throws {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError("addIceCandidate: the connection is closed") }
            if candidate.candidate.isEmpty {
                transport?.ice.endOfRemoteCandidates(now: .now)
                transport?.pump()
                return
            }
            let c: Candidate
            do { c = try Candidate(parsing: candidate.candidate) } catch {
                throw PeerConnectionError("addIceCandidate: \(error)")
            }
            if let transport, remoteCredentialsSet {
                transport.ice.addRemoteCandidate(c, now: .now)
                transport.pump()
            } else {
                pendingRemoteCandidates.append(c)
            }
        }
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
            terminal(connectionState) ? .connectionStateChanged(connectionState) : nil
        }, match: { if case .connectionStateChanged(let s) = $0 { return terminal(s) }; return false })
        switch event {
        case .connectionStateChanged(.connected): return
        case .connectionStateChanged(.failed):
            throw PeerConnectionError("connection failed" + (snapshot.withLock { $0.failure }.map { ": \($0)" } ?? ""))
        case .connectionStateChanged(.closed): throw PeerConnectionError("connection closed before it connected")
        default: throw PeerConnectionError("not connected after \(timeout) (ICE \(iceConnectionState.rawValue), DTLS \(dtlsState))")
        }
    }

    /// The first event that `match`es, or the `current` one if it already holds; nil on timeout or close.
    private func firstEvent(timeout: Duration, current: @escaping @Sendable () -> PeerConnectionEvent?,
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
            loop.schedule(at: .now.advanced(by: timeout)) { cont.finish() }
        }
        for await event in stream { return event }
        return nil
    }

    private var waiters: [(match: @Sendable (PeerConnectionEvent) -> Bool, cont: AsyncStream<PeerConnectionEvent>.Continuation)] = []

    /// Sends a compound RTCP packet (feedback, reports) on the connection.
    public func sendRTCP(_ packets: [RTCPPacket]) {
        transport?.sendRTCP(RTCPPacket.serializeCompound(packets))
    }

    /// W3C `close()`: stops ICE, sends DTLS close_notify, closes sockets.
    public func close() async {
        _ = try? await loop.submit { [self] in shutDown() }
    }

    private func shutDown() {
        guard !closed else { return }
        stopMediaStreams()
        transport?.close()
        closed = true
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

    // MARK: events from the transport (loop thread)

    private func handleIce(_ event: ICEEvent) {
        switch event {
        case .localCandidate(let c):
            localCandidates.append(c)
            publishLocalDescription()
            let mid = transceiverList.first?.mid ?? "0"
            emit(.iceCandidate(IceCandidate(candidate: c.attributeValue, sdpMid: mid, sdpMLineIndex: 0)))
        case .gatheringComplete:
            setGathering(.complete)
            publishLocalDescription()
        case .stateChanged(let s):
            setIce(IceConnectionState(rawValue: s.rawValue) ?? .new)
            updateConnectionState()
        case .selectedPairChanged(let local, let remote):
            snapshot.withLock { $0.selectedPair = (local.description, remote.description) }
            updateConnectionState()
        case .roleChanged:
            break
        }
    }

    private func route(_ packet: RTPPacket, size: Int) {
        var target = bySSRC[packet.ssrc]
        if target == nil, let id = midExtensionID, let data = packet.extensionData(id: id),
           let mid = String(validating: data, as: UTF8.self), let t = byMid[mid] {
            target = t
            bySSRC[packet.ssrc] = t
        }
        if target == nil {
            // Last resort: the only m-line that negotiated this payload type.
            let candidates = transceiverList.filter { $0.negotiatedCodecs.contains { $0.payloadType == packet.payloadType } }
            if candidates.count == 1 {
                target = candidates[0]
                bySSRC[packet.ssrc] = candidates[0]
            }
        }
        guard let target else {
            unroutedRTP += 1
            return
        }
        target.receiver.deliver(packet, size: size)
        if let mid = target.mid { media.videoReceive[mid]?.receive(packet, now: .now) ; media.audioReceive[mid]?.receive(packet, now: .now) }
    }
    private var unroutedRTP = 0

    private func route(_ packets: [RTCPPacket]) {
        routeToStreams(packets)
        for packet in packets {
            switch packet {
            case .senderReport(let sr):
                bySSRC[sr.ssrc]?.receiver.onRTCP?(packet)
            case .goodbye(let bye):
                for s in bye.ssrcs { bySSRC[s]?.receiver.onRTCP?(packet) }
            case .receiverReport(let rr):
                for report in rr.reports { sender(ssrc: report.ssrc)?.onRTCP?(packet) }
            case .nack(let n):
                sender(ssrc: n.mediaSSRC)?.onRTCP?(packet)
            case .pli(_, let media):
                sender(ssrc: media)?.onRTCP?(packet)
            case .fir(let f):
                for entry in f.entries { sender(ssrc: entry.ssrc)?.onRTCP?(packet) }
            case .remb, .transportCC:
                for t in transceiverList where t.currentDirection?.sends == true { t.sender.onRTCP?(packet) }
            default:
                break
            }
        }
    }

    private func sender(ssrc: UInt32) -> RtpSender? {
        transceiverList.first(where: { $0.sender.ssrc == ssrc })?.sender
    }

    // MARK: state bookkeeping (loop thread)

    private func publishLocalDescription() {
        guard let localType else { return }
        let sections: [LocalMediaSection]
        if localType == .offer {
            sections = localSDP.map(reparseSections) ?? []
        } else {
            sections = localSDP.map(reparseSections) ?? []
        }
        let text = writeSDP(sessionParameters(), sections: sections, bundle: true)
        snapshot.withLock { $0.localDescription = SessionDescription(type: localType, sdp: text) }
    }

    /// Our applied description's m-lines, to re-emit with the candidates gathered since.
    private func reparseSections(_ sdp: SDP.SessionDescription) -> [LocalMediaSection] {
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
                extensions: m.extMaps.map { (id: $0.id, uri: $0.uri) }, sender: t?.sender, rawFormats: m.formats)
        }
    }

    private func updateConnectionState() {
        guard !closed, let transport else { return }
        let dtls = transport.dtlsState
        snapshot.withLock { $0.dtlsState = "\(dtls)" }
        let next: PeerConnectionState
        if iceState == .failed || dtls == .failed {
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

    private func setSignaling(_ s: SignalingState) {
        guard snapshot.withLock({ $0.signaling }) != s else { return }
        snapshot.withLock { $0.signaling = s }
        emit(.signalingStateChanged(s))
    }

    private func setGathering(_ s: IceGatheringState) {
        guard snapshot.withLock({ $0.gathering }) != s else { return }
        snapshot.withLock { $0.gathering = s }
        emit(.iceGatheringStateChanged(s))
    }

    private func setIce(_ s: IceConnectionState) {
        guard iceState != s else { return }
        iceState = s
        snapshot.withLock { $0.ice = s }
        emit(.iceConnectionStateChanged(s))
    }

    private func setConnection(_ s: PeerConnectionState) {
        guard connectionState != s else { return }
        connectionState = s
        snapshot.withLock { $0.connection = s }
        emit(.connectionStateChanged(s))
    }

    private func emit(_ event: PeerConnectionEvent) {
        snapshot.withLock { $0.onEvent }?(event)
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
            return [
                "rtpReceived": c.rtpReceived, "rtcpReceived": c.rtcpReceived, "rtpSent": c.rtpSent, "rtcpSent": c.rtcpSent,
                "malformedRTP": c.malformedRTP, "malformedRTCP": c.malformedRTCP, "srtpErrors": c.srtpErrors,
                "unknownDatagrams": c.unknownDatagrams, "mediaBeforeKeys": c.mediaBeforeKeys, "unroutedRTP": unroutedRTP,
                "stunGarbage": ice.droppedGarbage, "stunBadIntegrity": ice.droppedBadIntegrity,
                "stunBadFingerprint": ice.droppedBadFingerprint, "stunUnauthorized": ice.droppedUnauthorized,
                "dtlsDroppedRecords": dtls?.droppedRecords ?? 0,
            ]
        }) ?? [:]
    }
}

extension PeerConnection {
    /// Loop thread only: everything getStats reports.
    func collectStats() -> StatsReport {
        var report = StatsReport()
        transportStats(into: &report, transport: transport)
        for t in transceiverList {
            guard let mid = t.mid else { continue }
            for codec in t.negotiatedCodecs {
                var c = RTCStats(id: "CO\(mid)_\(codec.payloadType)", type: "codec")
                c["payloadType"] = .int(Int(codec.payloadType))
                c["mimeType"] = .string(codec.mimeType)
                c["clockRate"] = .int(codec.clockRate)
                if let ch = codec.channels { c["channels"] = .int(ch) }
                if let f = codec.sdpFmtpLine { c["sdpFmtpLine"] = .string(f) }
                c["transportId"] = .string("T01")
                report.add(c)
            }
            let tx = t.sender.stats
            if t.currentDirection?.sends == true {
                var o = RTCStats(id: "OT\(mid)", type: "outbound-rtp")
                o["ssrc"] = .int(Int(t.sender.ssrc))
                o["kind"] = .string(t.kind.rawValue)
                o["mid"] = .string(mid)
                o["packetsSent"] = .int(tx.packets)
                o["bytesSent"] = .int(tx.bytes)
                o["transportId"] = .string("T01")
                if let first = t.negotiatedCodecs.first { o["codecId"] = .string("CO\(mid)_\(first.payloadType)") }
                report.add(o)
            }
            let rx = t.receiver.stats
            if t.currentDirection?.receives == true, let ssrc = t.receiver.remoteSSRCs.first {
                var i = RTCStats(id: "IT\(mid)", type: "inbound-rtp")
                i["ssrc"] = .int(Int(ssrc))
                i["kind"] = .string(t.kind.rawValue)
                i["mid"] = .string(mid)
                i["packetsReceived"] = .int(rx.packets)
                i["bytesReceived"] = .int(rx.bytes)
                i["transportId"] = .string("T01")
                report.add(i)
            }
            mediaStats(for: t, mid: mid, into: &report)
        }
        return report
    }
}

func randomToken(_ count: Int) -> String {
    let chars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    return String((0..<count).map { _ in chars[Int.random(in: 0..<chars.count)] })
}
