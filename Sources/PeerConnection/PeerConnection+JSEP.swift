import DTLS
import ICE
import RTP
import SDP
import STUN
import Transport

/// JSEP: building offers and answers, applying descriptions, finishing a negotiation.
extension PeerConnection {
    // MARK: offer / answer

    /// W3C `createOffer()`.
    public func createOffer() async throws -> SessionDescription {
        try await loop.submit { [self] in try makeOffer() }
    }

    /// The offer (loop thread). A re-offer keeps the m-lines we have, in their order with their
    /// mids (JSEP §5.2.2); a new transceiver takes the first m-line whose rejection was
    /// negotiated (recycled, any kind, with a new mid), else goes after them with the
    /// application m-line.
    func makeOffer() throws -> SessionDescription {
        guard !closed else { throw PeerConnectionError(.closed, "createOffer: the connection is closed") }
        let current = localSDP?.media ?? []
        let currentMids = current.enumerated().map { $1.mid ?? String($0) }
        var used = negotiation.usedMids.union(currentMids)
        used.formUnion(transceiverList.compactMap(\.mid) + [dataChannels.mid].compactMap { $0 })
        // New: not stopped and not in the current m-lines (a mid from an earlier, unapplied createOffer is kept).
        let new = transceiverList.filter { t in !t.isStopped && t.mid.map { !currentMids.contains($0) } ?? true }
        var next = 0
        for t in new where t.mid == nil {
            while used.contains(String(next)) { next += 1 }
            t.mid = String(next)
            used.insert(String(next))
        }
        var waiting = new[...]
        var sections: [LocalMediaSection] = []
        for (index, m) in current.enumerated() {
            let mid = currentMids[index]
            if m.kind == "application", mid == dataChannels.mid, let data = offeredDataSection(usedMids: &used) {
                sections.append(data)
            } else if let t = transceiverList.first(where: { $0.mid == mid }) {
                sections.append(offerSection(for: t))
            } else if isRecyclable(index: index, mid: mid), let t = waiting.popFirst() {
                sections.append(offerSection(for: t))
            } else {
                sections.append(LocalMediaSection(kind: m.kind, mid: mid, rejected: true, proto: m.proto, direction: .inactive,
                                                  codecs: [], extensions: [], sender: nil, rawFormats: m.formats))
            }
        }
        for t in waiting { sections.append(offerSection(for: t)) }
        if dataChannels.mid.map({ !currentMids.contains($0) }) ?? true, let data = offeredDataSection(usedMids: &used) {
            sections.append(data)
        }
        localSetup = "actpass"
        if iceRestartWanted { pendingCredentials = pendingCredentials ?? .random() }
        return SessionDescription(type: .offer, sdp: writeSDP(sessionParameters(credentials: pendingCredentials ?? credentials),
                                                              sections: sections, bundle: true))
    }

    /// Whether m-line `index` (mid `mid`, no transceiver of ours) may be recycled: it is rejected
    /// (port 0) in the current local or remote description of the last completed negotiation.
    func isRecyclable(index: Int, mid: String) -> Bool {
        guard !transceiverList.contains(where: { $0.mid == mid }), mid != dataChannels.mid else { return false }
        return [negotiation.stableLocal?.sdp, negotiation.stableRemote?.sdp].contains { sdp in
            guard let sdp, index < sdp.media.count else { return false }
            let m = sdp.media[index]
            return (m.mid ?? String(index)) == mid && m.port == 0
        }
    }

    /// One transceiver's m-line in our offer: what was negotiated if it was (payload types and
    /// extension ids must not move under running streams), else everything it can do.
    func offerSection(for t: RtpTransceiver) -> LocalMediaSection {
        let mid = t.mid ?? "0"
        if t.isStopped {
            return LocalMediaSection(kind: t.kind.rawValue, mid: mid, rejected: true, proto: "UDP/TLS/RTP/SAVPF", direction: .inactive,
                                     codecs: [], extensions: [], sender: nil,
                                     rawFormats: t.negotiatedCodecs.map { String($0.payloadType) })
        }
        if !t.negotiatedCodecs.isEmpty {
            var section = LocalMediaSection(kind: t.kind.rawValue, mid: mid, rejected: false, proto: "UDP/TLS/RTP/SAVPF",
                                            direction: t.direction, codecs: t.negotiatedCodecs,
                                            extensions: t.negotiatedHeaderExtensions.map { (id: Int($0.id), uri: $0.uri) }, sender: t.sender)
            offerSimulcast(t.sender.simulcastRIDs, into: &section)
            return section
        }
        var pts = Set<UInt8>()
        func freePayloadType(from preferred: UInt8) -> UInt8 {
            var pt = preferred
            while pts.contains(pt) { pt = pt >= 127 ? 96 : pt + 1 }
            pts.insert(pt)
            return pt
        }
        var codecs = t.codecCapabilities.map { cap -> RtpCodecParameters in
            RtpCodecParameters(payloadType: freePayloadType(from: cap.preferredPayloadType), mimeType: cap.mimeType,
                               clockRate: cap.clockRate, channels: cap.channels, sdpFmtpLine: cap.sdpFmtpLine,
                               rtcpFeedback: cap.rtcpFeedback)
        }
        // One RTX payload type per video codec, after it (as Chromium numbers them).
        if t.kind == .video {
            codecs = codecs.flatMap { c in
                [c, RTXCodec.parameters(payloadType: freePayloadType(from: c.payloadType &+ 1), repairing: c.payloadType)]
            }
        }
        let rids = t.sender.offeredRIDs
        var section = LocalMediaSection(kind: t.kind.rawValue, mid: mid, rejected: false, proto: "UDP/TLS/RTP/SAVPF",
                                        direction: t.direction, codecs: codecs,
                                        extensions: bundledExtensions(for: t.kind, simulcast: !rids.isEmpty, sends: t.direction.sends),
                                        sender: t.sender)
        offerSimulcast(rids, into: &section)
        return section
    }

    /// `a=rid:… send` and `a=simulcast:send …` for the layers we offer to send (none: nothing).
    private func offerSimulcast(_ rids: [String], into section: inout LocalMediaSection) {
        guard rids.count > 1, section.direction.sends else { return }
        section.rids = rids.map { RID(id: $0, direction: .send) }
        section.simulcast = Simulcast(send: rids.map { [Simulcast.Stream(rid: $0)] })
    }

    /// Our extension ids for a new m-line, made to agree with those the bundle already uses
    /// (one id means one URI across a BUNDLE group, RFC 8843 §9.1).
    func bundledExtensions(for kind: MediaKind, simulcast: Bool = false, sends: Bool = true) -> [(id: Int, uri: String)] {
        let inUse = transceiverList.flatMap(\.negotiatedHeaderExtensions)
        let offered = HeaderExtensionPolicy.offered(for: kind, simulcast: simulcast, sends: sends)
        guard !inUse.isEmpty else { return offered }
        var taken = Set(inUse.map { Int($0.id) })
        return offered.map { e in
            if let id = inUse.id(for: e.uri) { return (Int(id), e.uri) }
            var id = e.id
            while taken.contains(id) { id = id % 14 + 1 }
            taken.insert(id)
            return (id, e.uri)
        }
    }

    /// W3C `createAnswer()`: answers the remote offer with what our transceivers can do.
    public func createAnswer() async throws -> SessionDescription {
        try await loop.submit { [self] in try makeAnswer() }
    }

    func makeAnswer() throws -> SessionDescription {
        guard !closed else { throw PeerConnectionError(.closed, "createAnswer: the connection is closed") }
        guard remoteType == .offer, signalingState == .haveRemoteOffer, let offer = remoteSDP else {
            throw PeerConnectionError(.invalidState, "createAnswer: there is no remote offer")
        }
        if let role = transport?.dtlsRole {
            // A re-offer: DTLS keeps running, so our answer keeps its role.
            localSetup = role == .client ? "active" : "passive"
        } else {
            localSetup = configuration.answererDTLSRole == .client ? "active" : "passive"
            let offered = offer.transportSection?.setup ?? offer.setup
            if offered == .active { localSetup = "passive" }
            if offered == .passive { localSetup = "active" }
        }
        let sections = offer.media.enumerated().map { index, m in answerSection(for: m, index: index) }
        // The peer restarts ICE: so do we, with new credentials (a lite agent keeps its own when
        // its shared port finds sessions by a ufrag it cannot learn anew).
        if remoteRestartsICE(offer), answerRestartsCredentials() { pendingCredentials = pendingCredentials ?? .random() }
        return SessionDescription(type: .answer, sdp: writeSDP(sessionParameters(credentials: pendingCredentials ?? credentials),
                                                               sections: sections, bundle: true))
    }

    func answerSection(for m: MediaDescription, index: Int) -> LocalMediaSection {
        let mid = m.mid ?? String(index)
        let reject = LocalMediaSection(kind: m.kind, mid: mid, rejected: true, proto: m.proto, direction: .inactive,
                                       codecs: [], extensions: [], sender: nil, rawFormats: m.formats)
        if m.kind == "application" { return answerDataSection(for: m, mid: mid) ?? reject }
        guard m.port != 0, let t = transceiverList.first(where: { $0.mid == mid }), !t.isStopped else { return reject }
        let pairs = RtpCodecCapability.answered(m.codecs, by: t.codecCapabilities, order: configuration.answerCodecOrder)
        var chosen: [RtpCodecParameters] = []
        for (cap, offered) in pairs where !chosen.contains(where: { $0.payloadType == offered.payloadType }) {
            let feedback = offered.feedback.compactMap { fb -> RtcpFeedback? in
                let f = RtcpFeedback(type: fb.type, parameter: fb.parameter)
                return cap.rtcpFeedback.contains(f) ? f : nil
            }
            chosen.append(RtpCodecParameters(payloadType: offered.payloadType, mimeType: cap.mimeType,
                                             clockRate: offered.clockRate, channels: offered.channels,
                                             sdpFmtpLine: cap.answerFmtp(for: offered), rtcpFeedback: feedback))
        }
        guard !chosen.isEmpty else { return reject }
        // RTX for the video codecs we took, with the offer's payload types.
        if m.kind == "video" {
            for offered in m.codecs where offered.name.lowercased() == "rtx" && offered.clockRate == 90000 {
                if let apt = RTXCodec.associatedPayloadType(offered.fmtp), chosen.contains(where: { $0.payloadType == apt }),
                   !chosen.contains(where: { $0.payloadType == offered.payloadType }) {
                    chosen.append(RTXCodec.parameters(payloadType: offered.payloadType, repairing: apt))
                }
            }
        }
        let remoteDirection = TransceiverDirection(rawValue: m.direction.rawValue) ?? .sendrecv
        let direction = t.direction.intersection(remoteDirection.reversed)
        // Simulcast the peer sends, taken as offered (its rids, in its order) where we forward it.
        let offeredSimulcast = m.kind == "video" && direction.receives && configuration.receiveSimulcast
            ? m.simulcast.flatMap { s in s.send.isEmpty ? nil : s } : nil
        let rids = offeredSimulcast.map { s in
            m.rids.filter { $0.direction == .send && s.sendRIDs.contains($0.id) }.map { RID(id: $0.id, direction: .recv) }
        } ?? []
        // Accepted with the offer's ids (RFC 8285 §6): mid, and for video the orientation.
        // abs-send-time (where the configuration stamps it: a relay's players) unless we answer
        // transport-wide numbers, which the estimate then comes from: without either the
        // peer's REMB is estimated from RTP timestamps, the publisher's capture times.
        let answersTransportCC = configuration.transportWideCC
            && m.extMaps.contains { $0.uri == RTPExtensionURI.transportWideCC }
        let extensions = m.extMaps.filter { HeaderExtensionPolicy.accepts($0.uri, kind: m.kind, simulcast: !rids.isEmpty)
            && (1...255).contains($0.id) && (configuration.transportWideCC || $0.uri != RTPExtensionURI.transportWideCC)
            && ((configuration.absSendTime && !answersTransportCC) || $0.uri != RTPExtensionURI.absSendTime) }
            .map { (id: $0.id, uri: $0.uri) }
        return LocalMediaSection(kind: m.kind, mid: mid, rejected: false, proto: m.proto, direction: direction,
                                 codecs: chosen, extensions: extensions, sender: t.sender, rids: rids,
                                 simulcast: rids.isEmpty ? nil : offeredSimulcast.map { Simulcast(recv: $0.send) })
    }

    func sessionParameters(credentials: ICECredentials? = nil) -> LocalSessionParameters {
        let fp = certificate.fingerprint
        let credentials = credentials ?? self.credentials
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
    /// Parsing happens on the caller's thread: a large description never holds the loop (where
    /// a relay's media for every other session runs).
    public func setRemoteDescription(_ description: SessionDescription) async throws {
        let parsed = description.type == .rollback ? nil : try Self.parseRemote(description.sdp)
        try await loop.submit { [self] in try applyRemote(description, parsed: parsed) }
    }

    /// A remote description, parsed, with at most `ICEConfiguration.maxRemoteCandidates` distinct
    /// candidates (more is a flood, refused before any work is done for it).
    static func parseRemote(_ sdp: String) throws -> SDP.SessionDescription {
        let parsed: SDP.SessionDescription
        do { parsed = try SDP.SessionDescription(parsing: sdp) } catch {
            throw PeerConnectionError(.invalidDescription, "setRemoteDescription: \(error)", line: sdpLine(of: error))
        }
        let candidates = Set(parsed.media.flatMap(\.candidates)).count
        let limit = ICEConfiguration().maxRemoteCandidates
        guard candidates <= limit else {
            throw PeerConnectionError(.limitExceeded, "setRemoteDescription: the description carries \(candidates) candidates; at most \(limit) are taken")
        }
        return parsed
    }

    func applyLocal(_ description: SessionDescription) throws {
        guard !closed else { throw PeerConnectionError(.closed, "setLocalDescription: the connection is closed") }
        if description.type == .rollback { return try rollbackLocal() }
        let parsed: SDP.SessionDescription
        do { parsed = try SDP.SessionDescription(parsing: description.sdp) } catch {
            throw PeerConnectionError(.invalidDescription, "setLocalDescription: \(error)", line: sdpLine(of: error))
        }
        switch (description.type, signalingState) {
        case (.offer, .stable), (.offer, .haveLocalOffer): setSignaling(.haveLocalOffer)
        case (.answer, .haveRemoteOffer), (.pranswer, .haveRemoteOffer): setSignaling(.stable)
        default:
            throw PeerConnectionError(.invalidState, "setLocalDescription: cannot apply a local \(description.type.rawValue) in state \(signalingState.rawValue)")
        }
        localSDP = parsed
        localType = description.type
        negotiation.usedMids.formUnion(mids(of: parsed))
        sessionVersion += 1
        if transport == nil { try startTransport(controlling: description.type == .offer) } else { applyLocalCredentials(parsed) }
        if description.type == .answer { try finishNegotiation(local: parsed, remote: remoteSDP, localIsOffer: false) }
        publishLocalDescription()
        if description.type == .answer { negotiationFinished() }
    }

    /// `parsed`: the description as `parseRemote` made it (nil for a rollback, or to parse here).
    func applyRemote(_ description: SessionDescription, parsed: SDP.SessionDescription? = nil) throws {
        guard !closed else { throw PeerConnectionError(.closed, "setRemoteDescription: the connection is closed") }
        if description.type == .rollback { return try rollbackRemote() }
        let parsed = try parsed ?? Self.parseRemote(description.sdp)
        try validateRemote(parsed)
        if description.type == .offer { try validateRemoteOffer(parsed) }
        // Glare: an offer while ours is out rolls ours back (W3C implicit rollback, perfect negotiation).
        if description.type == .offer, signalingState == .haveLocalOffer { try rollbackLocal() }
        switch (description.type, signalingState) {
        case (.offer, .stable), (.offer, .haveRemoteOffer):
            setSignaling(.haveRemoteOffer)
            associateTransceivers(with: parsed)
        case (.answer, .haveLocalOffer), (.pranswer, .haveLocalOffer):
            setSignaling(.stable)
        default:
            throw PeerConnectionError(.invalidState, "setRemoteDescription: cannot apply a remote \(description.type.rawValue) in state \(signalingState.rawValue)")
        }
        remoteSDP = parsed
        remoteType = description.type
        negotiation.usedMids.formUnion(mids(of: parsed))
        snapshot.withLock { $0.remoteDescription = description }
        if description.type == .answer || description.type == .pranswer, let localSDP {
            try finishNegotiation(local: localSDP, remote: parsed, localIsOffer: true)
            negotiationFinished()
        }
    }

    /// The remote offer's m-lines with no transceiver of ours (loop thread, JSEP §5.10): each
    /// takes our first unassociated addTrack transceiver of its kind, or else gets a new one
    /// like W3C's "recvonly" (the app may widen it). A recycled m-line is new in this sense:
    /// its new mid names no transceiver.
    func associateTransceivers(with offer: SDP.SessionDescription) {
        for (index, m) in offer.media.enumerated() where m.kind == "audio" || m.kind == "video" {
            let mid = m.mid ?? String(index)
            guard !transceiverList.contains(where: { $0.mid == mid }) else { continue }
            let kind: MediaKind = m.kind == "audio" ? .audio : .video
            if m.port != 0, let t = transceiverList.first(where: { $0.kind == kind && $0.createdByAddTrack && $0.mid == nil && !$0.isStopped }) {
                t.mid = mid
                negotiation.matchedByRemoteOffer.append(t)
                continue
            }
            let t = makeTransceiver(kind, TransceiverInit(direction: configuration.remoteTransceiverDirection), codecs: nil)
            t.mid = mid
            negotiation.madeByRemoteOffer.append(t)
        }
    }

    func mids(of sdp: SDP.SessionDescription) -> [String] {
        sdp.media.enumerated().map { $1.mid ?? String($0) }
    }

    /// A remote offer keeps every m-line of the current negotiation in its place (JSEP §5.2.2):
    /// only one rejected in the current descriptions may come back with a new mid (recycled).
    func validateRemoteOffer(_ offer: SDP.SessionDescription) throws {
        let theirs = mids(of: offer)
        if let duplicate = Dictionary(grouping: theirs, by: { $0 }).first(where: { $1.count > 1 })?.key {
            throw PeerConnectionError(.invalidDescription, "setRemoteDescription: mid \(duplicate) is on more than one m-line")
        }
        guard let current = negotiation.stableLocal?.sdp else { return }
        let ours = mids(of: current)
        guard theirs.count >= ours.count else {
            throw PeerConnectionError(.invalidDescription, "setRemoteDescription: the offer has \(theirs.count) m-lines, the current session \(ours.count); m-lines cannot be removed, only rejected")
        }
        for (index, mid) in ours.enumerated() where theirs[index] != mid {
            let rejected = current.media[index].port == 0
                || negotiation.stableRemote.map { index < $0.sdp.media.count && $0.sdp.media[index].port == 0 } == true
            guard rejected else {
                throw PeerConnectionError(.invalidDescription, "setRemoteDescription: m-line \(index) has mid \(theirs[index]) in the offer but \(mid) in the session; only a rejected m-line may take a new mid")
            }
            guard !ours.contains(theirs[index]) else {
                throw PeerConnectionError(.invalidDescription, "setRemoteDescription: m-line \(index) recycles mid \(theirs[index]), which m-line \(ours.firstIndex(of: theirs[index]) ?? 0) already has")
            }
        }
    }

    /// What every remote description must carry for our transport, checked before anything changes.
    func validateRemote(_ sdp: SDP.SessionDescription) throws {
        guard let first = sdp.transportSection else {
            throw PeerConnectionError(.invalidDescription, "setRemoteDescription: the description has no m= line")
        }
        guard (first.iceUfrag ?? sdp.iceUfrag) != nil, (first.icePwd ?? sdp.icePwd) != nil else {
            throw PeerConnectionError(.invalidDescription, "setRemoteDescription: m-line \(first.mid ?? "0") has no a=ice-ufrag/a=ice-pwd")
        }
        guard (first.fingerprint ?? sdp.fingerprint) != nil else {
            throw PeerConnectionError(.invalidDescription, "setRemoteDescription: m-line \(first.mid ?? "0") has no a=fingerprint (DTLS is required)")
        }
        for m in sdp.media where m.port != 0 && m.kind != "application" && !m.proto.contains("SAVPF") && !m.proto.contains("SAVP") {
            throw PeerConnectionError(.unsupported, "setRemoteDescription: m-line \(m.mid ?? "?") uses \(m.proto); only UDP/TLS/RTP/SAVPF is supported")
        }
    }

    func startTransport(controlling: Bool) throws {
        let monitor = startInterfaceMonitor()
        let io: PacketIO
        do { io = try ioFactory(loop, credentials.ufrag) } catch {
            monitor?.stop()
            throw PeerConnectionError(.transport, "cannot open the transport: \(error)")
        }
        var iceConfig = ICEConfiguration()
        iceConfig.lite = configuration.iceLite
        let relayOnly = configuration.iceTransportPolicy == .relay
        iceConfig.stunServers = relayOnly ? [] : iceServers.stun
        let role: ICERole = configuration.iceLite ? .controlled : (controlling ? .controlling : .controlled)
        let agent = ICEAgent(role: role, local: credentials, configuration: iceConfig, seed: timingSeeds.next())
        let t = MediaTransport(loop: loop, io: io, ice: agent, certificate: certificate, srtpBackend: configuration.srtpBackend)
        t.startBitrate = configuration.startBitrate
        t.interfaceMonitor = monitor
        transport = t
        // Weak: the transport can outlive its PeerConnection by a packet or a timer (the loop or
        // the UDP mux still holds it when the last reference to the pc goes).
        t.onIceEvent = { [weak self] in self?.handleIce($0) }
        t.onDTLSConnected = { [weak self] _ in
            guard let self else { return }
            startDataChannels()
            // Frames encoded before the keys existed were dropped unsent: start on a keyframe.
            for stream in media.videoSend.values { stream.requestKeyframe() }
            updateConnectionState()
        }
        t.onDTLSFailed = { [weak self] reason in
            guard let self else { return }
            snapshot.withLock { $0.failure = reason }
            emit(.error(PeerConnectionError(.transport, reason)))
            updateConnectionState()
        }
        t.onDTLSClosed = { [weak self] in self?.updateConnectionState() }
        t.onSelectedPathLost = { [weak self] in self?.selectedPathLost() }
        t.onTURNError = { [weak self] reason, fatal in
            guard let self else { return }
            snapshot.withLock { $0.failure = reason }
            emit(.error(PeerConnectionError(.transport, reason)))
            // Relay-only with every allocation gone: nothing can ever connect.
            if fatal {
                relayFailed = true
                setIce(.failed)
            }
            updateConnectionState()
        }
        for problem in iceServers.problems { emit(.error(problem)) }
        t.gatherHosts = !relayOnly
        t.addRelays(iceServers.turn)
        t.onRTP = { [weak self] packet, bytes in self?.route(packet, bytes: bytes) }
        t.onRTCP = { [weak self] packets in self?.route(packets) }
        setGathering(.gathering)
        t.gather()
        flushPendingCandidates()
        t.pump()
    }

    func finishNegotiation(local: SDP.SessionDescription, remote: SDP.SessionDescription?, localIsOffer: Bool) throws {
        guard let remote, let transport else { return }
        let answer = localIsOffer ? remote : local
        let offer = localIsOffer ? local : remote
        // Transceivers: negotiated codecs, direction, mid extension, remote SSRCs.
        midExtensionID = nil
        var transportCCIDs: [String: UInt8] = [:]
        var newTracks: [RtpTransceiver] = []
        for (index, m) in answer.media.enumerated() {
            let mid = m.mid ?? String(index)
            guard let t = transceiverList.first(where: { $0.mid == mid }) else { continue }
            t.mLineIndex = index
            byMid[mid] = t
            let wasReceiving = t.currentDirection?.receives == true
            defer { if t.currentDirection?.receives == true, !wasReceiving { newTracks.append(t) } }
            if m.port == 0 {
                if !negotiation.stopNegotiated.contains(where: { $0 === t }) { negotiation.stopNegotiated.append(t) }
                t.markStopped()
                t.currentDirection = .inactive
                t.negotiatedCodecs = []
                t.negotiatedHeaderExtensions = []
                t.sender.videoOrientationExtensionID = nil
                t.sender.transportCCExtensionID = nil
                t.sender.absSendTimeExtensionID = nil
                t.sender.simulcastRIDs = []
                t.sender.ridExtensionID = nil
                t.nackPayloadTypes = []
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
            // The answer lists what both sides use; ids outside RFC 8285's range are ignored.
            // Simulcast is ours to receive only as our answer took it (`receiveSimulcast`).
            let simulcastRIDs = !localIsOffer && configuration.receiveSimulcast ? m.simulcast?.recvRIDs ?? [] : []
            t.receiveRIDs = simulcastRIDs
            // Simulcast we send: the layers of our offer the answer takes to receive, in our order.
            let answerRIDs = localIsOffer && t.currentDirection?.sends == true ? m.simulcast?.recvRIDs ?? [] : []
            let sendRIDs = t.sender.offeredRIDs.filter(answerRIDs.contains)
            t.negotiatedHeaderExtensions = m.extMaps.compactMap { e in
                guard HeaderExtensionPolicy.accepts(e.uri, kind: m.kind, simulcast: !simulcastRIDs.isEmpty || sendRIDs.count > 1),
                      (1...255).contains(e.id)
                else { return nil }
                return RtpHeaderExtensionParameters(uri: e.uri, id: UInt8(e.id))
            }
            t.ridExtensionID = t.negotiatedHeaderExtensions.id(for: RTPExtensionURI.rtpStreamID)
            t.repairedRIDExtensionID = t.negotiatedHeaderExtensions.id(for: RTPExtensionURI.repairedRTPStreamID)
            // Without the rid element a receiver cannot tell the layers apart: one stream then.
            let sendsSimulcast = sendRIDs.count > 1 && t.ridExtensionID != nil
            t.sender.simulcastRIDs = sendsSimulcast ? sendRIDs : []
            t.sender.ridExtensionID = sendsSimulcast ? t.ridExtensionID : nil
            t.sender.repairedRIDExtensionID = sendsSimulcast ? t.repairedRIDExtensionID : nil
            t.sender.videoOrientationExtensionID = t.kind == .video
                ? t.negotiatedHeaderExtensions.id(for: RTPExtensionURI.videoOrientation) : nil
            t.sender.rtxPayloadTypes = Dictionary(RTXCodec.map(t.negotiatedCodecs).map { ($1, $0) }) { a, _ in a }
            t.rtxAssociations = RTXCodec.map(t.negotiatedCodecs)
            t.nackPayloadTypes = Set(t.negotiatedCodecs.filter { $0.rtcpFeedback.contains(.nack) }.map(\.payloadType))
            let transportCC = t.negotiatedHeaderExtensions.id(for: RTPExtensionURI.transportWideCC)
            t.sender.transportCCExtensionID = transportCC
            t.sender.absSendTimeExtensionID = t.kind == .video
                ? t.negotiatedHeaderExtensions.id(for: RTPExtensionURI.absSendTime) : nil
            if let transportCC { transportCCIDs[mid] = transportCC }
            t.sender.transport = transport
            t.sender.mid = mid
        }
        for t in transceiverList {
            t.sender.midExtensionID = midExtensionID
            t.sender.configureLayers()
        }
        // The peer sends feedback on what we send if it took transport-cc or REMB for it. A
        // pass-through peer (a relay's player) forwards outside the pacer and reads a REMB
        // itself: REMB alone would only make its controller tick every 25 ms for nothing.
        let sending = transceiverList.filter { $0.currentDirection?.sends == true }
        let feedback = sending.contains { t in
            t.sender.transportCCExtensionID != nil
                || (configuration.mediaPipeline && t.negotiatedCodecs.contains { $0.rtcpFeedback.contains(.remb) })
        }
        let receivingVideo = transceiverList.filter { $0.kind == .video && $0.currentDirection?.receives == true }
        // REMB for a peer whose video codecs take goog-remb but not transport-cc (aiortc, old
        // libwebrtc): with transport-cc its own estimator knows better than ours.
        let rembWanted = receivingVideo.contains { t in
            t.negotiatedCodecs.contains { $0.rtcpFeedback.contains(.remb) && !$0.rtcpFeedback.contains(.transportCC) }
        }
        transport.congestion.configure(receiveExtensionIDs: Set(transportCCIDs.values),
                                       feedbackSSRC: transceiverList.first?.sender.ssrc ?? 0, sendFeedback: feedback,
                                       sendREMB: rembWanted)
        for (index, m) in remote.media.enumerated() {
            let mid = m.mid ?? String(index)
            guard let t = byMid[mid] else { continue }
            for s in m.ssrcs { bySSRC[s.ssrc] = t }
            // a=ssrc-group:FID media rtx (RFC 5576 §4): which stream an RTX stream repairs.
            for group in m.ssrcGroups where group.semantics == "FID" && group.ssrcs.count == 2 {
                t.rtxRepairs[group.ssrcs[1]] = group.ssrcs[0]
            }
        }
        // ICE: remote credentials and candidates (BUNDLE: the first live m-line's transport).
        if let theirs = iceCredentials(of: remote) {
            if !remoteCredentialsSet {
                transport.ice.setRemoteCredentials(theirs, remoteIsLite: remote.iceLite, now: loop.now)
                remoteCredentialsSet = true
            } else if transport.ice.remoteCredentials != theirs {
                // An ICE restart: checks start over with the peer's new credentials; DTLS stays.
                if transport.ice.remoteCredentials != nil { transport.ice.restart(local: credentials, now: loop.now) }
                transport.ice.setRemoteCredentials(theirs, remoteIsLite: remote.iceLite, now: loop.now)
            }
        }
        var ended = false
        var candidates: [Candidate] = []
        for m in remote.media {
            candidates += m.candidates.compactMap { try? Candidate(parsing: $0) }
            ended = ended || m.endOfCandidates
        }
        transport.ice.addRemoteCandidates(candidates, now: loop.now)
        if ended { transport.ice.endOfRemoteCandidates(now: loop.now) }
        // DTLS: role from a=setup (of the live m-line carrying the transport: a rejected first
        // m-line has none, and reading it made both sides DTLS clients), fingerprints from the remote.
        let offerSetup = (offer.transportSection?.setup ?? offer.setup) ?? .actpass
        let answerSetup = (answer.transportSection?.setup ?? answer.setup) ?? .active
        let weAreOfferer = localIsOffer
        let role: DTLSRole
        switch (offerSetup, answerSetup) {
        case (_, .active): role = weAreOfferer ? .server : .client
        case (_, .passive): role = weAreOfferer ? .client : .server
        default:
            throw PeerConnectionError(.invalidDescription, "setRemoteDescription: the answer's a=setup must be active or passive")
        }
        negotiateDataChannels(answer: answer, remote: remote)
        stopUnnegotiatedStreams()
        startMediaStreams()
        let fingerprints = remote.media.compactMap(\.fingerprint) + [remote.fingerprint].compactMap { $0 }
        do {
            try transport.configureDTLS(role: role, remoteFingerprints: fingerprints.map {
                DTLS.Fingerprint(algorithm: $0.algorithm.lowercased(), value: $0.value.uppercased())
            })
        } catch {
            throw PeerConnectionError(.transport, "DTLS set-up failed: \(error)")
        }
        // An application m-line added by a renegotiation: SCTP starts on the running DTLS.
        if transport.dtlsState == .connected {
            startDataChannels()
            transport.pump()
        }
        updateConnectionState()
        for t in newTracks { emit(.track(t)) }
    }
}

extension SDP.SessionDescription {
    /// The m-section whose transport attributes count: the first one not rejected (port 0), else
    /// the first (BUNDLE puts ICE and DTLS on a live section; a rejected one carries none).
    var transportSection: SDP.MediaDescription? { media.first { $0.port != 0 } ?? media.first }
}
