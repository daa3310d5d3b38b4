import BandwidthEstimation
import DTLS
import ICE
import RTP
import SCTP
import SRTP
import STUN
import Transport
import TURN

/// One connection's transport stack on its loop thread: ICE picks the path, DTLS makes the
/// keys, SRTP protects media; RFC 7983 demultiplexes the shared port. Only the owning loop
/// thread touches it; sends from other threads hop there first.
package final class MediaTransport: @unchecked Sendable {
    /// The zero of the abs-send-time stamps this process writes.
    private static let absSendTimeEpoch = ContinuousClock.now
    // @unchecked: every member is used on `loop`'s thread only (see `sendRTP`).
    // What every forwarded packet touches comes first: stored properties are laid out in this
    // order, and with hundreds of connections on a relay each extra cache line is a miss.
    let io: PacketIO
    let ice: ICEAgent
    private(set) var srtp: SRTPSession? { didSet { ForwardingEpoch.bump() } }
    /// TURN allocations (see MediaTransport+TURN.swift). With any, forwarded packets leave
    /// one by one (`queueForwarded`), not from a forwarding snapshot.
    var relays: [RelayAllocation] = [] { didSet { ForwardingEpoch.bump() } }
    private(set) var counters = TransportCounters()
    let loop: EventLoop
    let certificate: DTLSCertificate
    private(set) var dtls: DTLSTransport?
    private(set) var dtlsRole: DTLSRole?
    private var earlyDTLS: [[UInt8]] = []
    private var lastDTLSSource: SocketAddress?
    private var lastDTLSLocal: SocketAddress?
    /// The armed timer and its deadline.
    private var timer: (id: Int, deadline: ContinuousClock.Instant)?
    private(set) var closed = false
    private let srtpBackend: SRTPBackend

    var onIceEvent: ((ICEEvent) -> Void)?
    var onDTLSConnected: ((SRTPKeyingMaterial?) -> Void)?
    var onDTLSFailed: ((String) -> Void)?
    var onDTLSClosed: (() -> Void)?
    /// A received RTP packet, parsed and as plaintext bytes (after SRTP).
    var onRTP: ((RTPPacket, [UInt8]) -> Void)?
    var onRTCP: (([RTCPPacket]) -> Void)?
    var onApplicationData: (([UInt8]) -> Void)?
    /// SCTP for data channels once DTLS is up (PeerConnection+DataChannel.swift): its packets
    /// travel as DTLS application data, its timer shares ours.
    var dataChannels: DataChannelTransport?
    var onDataChannelEvent: ((DataChannelTransportEvent) -> Void)?
    private var pumping = false, pumpAgain = false
    /// A TURN allocation failed; `fatal` when it was the last hope (relay-only, none left).
    var onTURNError: ((String, _ fatal: Bool) -> Void)?

    /// False for `iceTransportPolicy: .relay`: host sockets carry only TURN traffic.
    var gatherHosts = true
    /// Continual gathering (MediaTransport+Interfaces.swift): the host's address changes.
    var interfaceMonitor: InterfaceMonitor?
    /// TURN servers, for allocations from interface addresses that appear later.
    var turnServers: [TURNServerEntry] = []
    /// The selected path's local address went away: only an ICE restart may find a new one.
    var onSelectedPathLost: (() -> Void)?
    var gatheringStarted = false
    var iceGatheringFinished = false
    /// Why TURN servers got no allocation at all (no TCP connection, a TLS set-up error).
    var relaySetupErrors: [String] = []
    /// After `close`: waiting for the servers to answer Refresh(0) (a 438 needs one retry).
    var lingerTimer: Int?
    private(set) var socketsClosed = false
    private var socketsClosedWaiters: [() -> Void] = []

    /// Transport-wide congestion control: sequence numbers, feedback both ways, estimator, pacer.
    package private(set) lazy var congestion = CongestionController(transport: self, startBitrate: startBitrate)
    /// Set before media flows (PeerConnection's configuration).
    var startBitrate = BandwidthEstimator.Configuration().startBitrate

    init(loop: EventLoop, io: PacketIO, ice: ICEAgent, certificate: DTLSCertificate, srtpBackend: SRTPBackend) {
        self.loop = loop
        self.io = io
        self.ice = ice
        self.certificate = certificate
        self.srtpBackend = srtpBackend
        // Weak: the mux delivers to an endpoint until it is closed, which may be after we are gone.
        io.onReceive = { [weak self] bytes, from, local in self?.receive(bytes, from: from, local: local) ?? .refused }
    }

    var dtlsState: DTLSState { dtls?.state ?? .new }
    private(set) var srtpProfileName: String?

    // MARK: set-up

    /// Adds our bases to ICE (host candidates appear as ICE events) and starts the TURN
    /// allocations; gathering finishes when every allocation has succeeded or failed.
    func gather() {
        let now = loop.now
        gatheringStarted = true
        if gatherHosts {
            for address in io.localAddresses { ice.addLocalBase(address, now: now) }
        }
        for relay in relays { relay.client.start(now: now) }
        if !gatherHosts, relays.isEmpty {
            // The servers' own errors say more than "none left", when there were servers.
            let reason = relaySetupErrors.isEmpty ? "iceTransportPolicy relay, but no usable turn: server: there is nothing to gather"
                                                  : relaySetupErrors.joined(separator: "; ")
            onTURNError?(reason, true)
        }
        finishGatheringIfSettled(now: now)
        pump()
    }

    /// Called once the remote description fixed who is the DTLS client.
    func configureDTLS(role: DTLSRole, remoteFingerprints: [Fingerprint]) throws(DTLSError) {
        guard dtls == nil else { return }
        let transport = try DTLSTransport(role: role, certificate: certificate, remoteFingerprints: remoteFingerprints)
        dtls = transport
        dtlsRole = role
        if role == .server || ice.selectedPair != nil { transport.start(now: loop.now) }
        for datagram in earlyDTLS { transport.handleDatagram(datagram, now: loop.now) }
        earlyDTLS.removeAll()
        pump()
    }

    // MARK: receive

    private func receive(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, local: SocketAddress) -> Delivery {
        loop.preconditionInLoop()
        guard !closed else {
            lingeringReceive(bytes, from: from, local: local)
            return .refused
        }
        let delivery: Delivery
        // Binding responses from a server that is both STUN and TURN are ICE's (srflx gathering).
        if !relays.isEmpty, let relay = relays.first(where: { $0.server == from && $0.base == local }),
           !STUNMessage.isBinding(bytes) {
            relay.client.handleDatagram(Array(bytes), now: loop.now)
            delivery = .accepted
        } else {
            delivery = demultiplex(bytes, from: from, local: local)
        }
        pump()
        return delivery
    }

    /// RFC 7983 on one datagram, from a socket or unwrapped from a TURN allocation. DTLS and
    /// media count only from addresses ICE verified (an authenticated check): anything else is
    /// refused unseen, so a spoofed source can neither feed the handshake nor draw its answers.
    @discardableResult
    func demultiplex(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, local: SocketAddress) -> Delivery {
        guard let first = bytes.first else { return .refused }
        let now = loop.now
        switch first {
        case 0...3:
            guard ice.handleSTUN(Array(bytes), from: from, local: local, now: now) else { return .accepted }
            io.addressVerified(from)
            // A check proves the peer is alive there only once the keys prove who the peer is.
            return dtls?.state == .connected ? .authenticated : .accepted
        case 20...63:
            guard isVerified(from) else {
                counters.unverifiedDatagrams += 1
                return .refused
            }
            guard let dtls else {
                guard earlyDTLS.count < 16 else { return .refused }
                earlyDTLS.append(Array(bytes))
                lastDTLSSource = from
                lastDTLSLocal = local
                return .accepted
            }
            // Once connected, epoch-0 records start someone else's handshake (ours would drop them).
            if dtls.state == .connected, DTLSTransport.startsNewHandshake(bytes) { return .refused }
            lastDTLSSource = from
            lastDTLSLocal = local
            let wasConnected = dtls.state == .connected
            dtls.handleDatagram(Array(bytes), now: now)
            if dtls.state == .connected { ice.noteReceived(from: from, now: now) }
            return !wasConnected && dtls.state == .connected ? .authenticated : .accepted
        case 128...191:
            guard isVerified(from) else {
                counters.unverifiedDatagrams += 1
                return .refused
            }
            guard receiveMedia(bytes) else { return .refused }
            ice.noteReceived(from: from, now: now)
            return .authenticated
        default:
            counters.unknownDatagrams += 1
            return .refused
        }
    }

    /// The selected pair's address first: one comparison for nearly every packet.
    private func isVerified(_ address: SocketAddress) -> Bool {
        if let (_, remote) = ice.selectedPair, remote == address { return true }
        return ice.isVerified(address)
    }

    /// True when the packet authenticated (malformed plaintext inside still counts as ours).
    private func receiveMedia(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let srtp else {
            counters.mediaBeforeKeys += 1
            return false
        }
        let isRTCP = bytes.count >= 2 && (192...223).contains(bytes[1])
        do {
            if isRTCP {
                let plain = try srtp.unprotectRTCP(Array(bytes))
                do {
                    let packets = try RTCPPacket.parseCompound(plain)
                    counters.rtcpReceived += 1
                    onRTCP?(packets)
                } catch {
                    counters.malformedRTCP += 1
                }
            } else {
                let plain = try srtp.unprotectRTP(Array(bytes))
                do {
                    let packet = try RTPPacket(parsing: plain)
                    counters.rtpReceived += 1
                    congestion.received(packet, now: Moment(loop.arrivalTime))
                    onRTP?(packet, plain)
                } catch {
                    counters.malformedRTP += 1
                }
            }
            return true
        } catch {
            counters.srtpErrors += 1
            return false
        }
    }

    // MARK: send

    /// Sends an RTP packet written whole by the caller (its own SSRC, numbers and extensions),
    /// at once: for packets no sender of ours makes (a test writing a simulcast publisher's
    /// layers, each its own SSRC).
    package func sendRaw(_ packet: [UInt8]) { sendRTP(packet) }

    /// Protects and sends one RTP packet on the selected pair; any thread. `transportCCID`: the
    /// id of the packet's transport-wide sequence number placeholder, filled in here as it
    /// leaves. Video goes through the pacer; audio, retransmissions and forwards do not wait.
    func sendRTP(_ packet: [UInt8], transportCCID: UInt8? = nil, kind: OutgoingRTPKind = .direct) {
        guard loop.inLoop else {
            loop.execute { [self] in sendRTP(packet, transportCCID: transportCCID, kind: kind) }
            return
        }
        congestion.send(packet, transportCCID: transportCCID, kind: kind, now: Moment(loop.now))
    }

    /// Whether media can leave: keys made and a path selected.
    var canSendMedia: Bool { !closed && srtp != nil && ice.selectedPair != nil }

    /// The last step of every RTP packet: SRTP and the socket (loop thread).
    func transmitRTP(_ packet: [UInt8]) -> Bool {
        loop.preconditionInLoop()
        guard let srtp, let (local, remote) = ice.selectedPair else {
            counters.sendsWithoutPath += 1
            return false
        }
        do {
            let protected = try srtp.protectRTP(packet)
            if sendDatagram(protected, from: local, to: remote) {
                counters.rtpSent += 1
                return true
            }
            counters.sendErrors += 1
        } catch {
            counters.srtpErrors += 1
        }
        return false
    }

    /// The forwarding fast path (loop thread): the plaintext RTP packet in `slot[0..<length]`
    /// (a slot of `batch`) gets its transport-wide sequence number at `transportCCOffset` and
    /// its send time at `absSendTimeOffset`, is protected in place and queued on `batch` when
    /// this connection sends on a shared socket (else sent at once). False when it cannot
    /// leave (no keys or path yet, SRTP failed).
    package func queueForwarded(slot: UnsafeMutableRawBufferPointer, length: Int, transportCCOffset: Int?,
                                absSendTimeOffset: Int? = nil, batch: UDPSendBatch, now: ContinuousClock.Instant) -> Bool {
        loop.preconditionInLoop()
        guard let srtp, let (local, remote) = ice.selectedPair else {
            counters.sendsWithoutPath += 1
            return false
        }
        if let offset = transportCCOffset {
            congestion.stampForwarded(slot, at: offset, wireSize: length + srtp.profile.rtpOverhead, now: Moment(now))
        }
        if let offset = absSendTimeOffset { Self.stampSendTime(slot, at: offset, now: now) }
        let protected: Int
        do { protected = try srtp.protectRTP(in: slot, length: length) } catch {
            counters.srtpErrors += 1
            return false
        }
        counters.rtpSent += 1
        if relays.isEmpty, let socket = io.batchSocket {
            batch.commit(length: protected, socket: socket, to: remote)
        } else if !sendDatagram(Array(slot[0..<protected]), from: local, to: remote) {
            counters.sendErrors += 1
        }
        return true
    }

    /// The abs-send-time placeholder at `offset` gets `now` (the relay's forwarding, either path).
    package static func stampSendTime(_ slot: UnsafeMutableRawBufferPointer, at offset: Int, now: ContinuousClock.Instant) {
        guard offset + 3 <= slot.count else { return }
        // Any epoch will do: the receiver reads differences (mod 64 s).
        let value = RTPExtensionCodec.absSendTime(seconds: (now - absSendTimeEpoch).seconds)
        slot[offset] = UInt8(truncatingIfNeeded: value >> 16)
        slot[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        slot[offset + 2] = UInt8(truncatingIfNeeded: value)
    }

    /// What the forwarding fast path sends with when it can skip this transport per packet
    /// (`RtpForwardingTarget`): the keys, the shared socket and the selected remote address.
    /// Nil when packets must come through `queueForwarded` (closed, no keys or path yet, TURN,
    /// a socket of our own). Any change to these bumps `ForwardingEpoch`.
    package func forwardingPath() -> (srtp: SRTPSession, socket: UDPSocket, remote: SocketAddress)? {
        guard !closed, relays.isEmpty, let srtp, let (_, remote) = ice.selectedPair, let socket = io.batchSocket else { return nil }
        return (srtp, socket, remote)
    }

    /// Fast-path packets counted as sent (they are counted here in bulk, not one by one).
    package func noteForwarded(_ packets: Int) { counters.rtpSent += packets }
    package func noteForwardingSRTPError() { counters.srtpErrors += 1 }

    /// The RTT that paces NACK retries where no receiver report gives one (a receive-only
    /// stream, a relay's pass-through): the ICE checks', else how long first requests took to be
    /// answered (`turnaround`; an ICE-lite relay sends no checks). On the 100 ms default a second
    /// request went ~60 ms late on a 40–50 ms path: a packet lost twice took 180–200 ms, and
    /// held its frame into a W3C freeze (interop, 5% loss on both legs of a relayed stream).
    func nackRTT(turnaround: Duration?) -> Duration? { ice.selectedPairRTT ?? turnaround }

    /// Protects and sends a compound RTCP packet; any thread.
    func sendRTCP(_ packet: [UInt8]) {
        guard loop.inLoop else {
            loop.execute { [self] in sendRTCP(packet) }
            return
        }
        guard let srtp, let (local, remote) = ice.selectedPair else {
            counters.sendsWithoutPath += 1
            return
        }
        do {
            let protected = try srtp.protectRTCP(packet)
            if sendDatagram(protected, from: local, to: remote) { counters.rtcpSent += 1 } else { counters.sendErrors += 1 }
        } catch {
            counters.srtpErrors += 1
        }
    }

    // MARK: the pump

    /// Drains every core's output and re-arms the single timer.
    func pump() {
        loop.preconditionInLoop()
        guard !closed else { return }
        // Event handlers may send (a data channel echoing a message): the running pump drains it.
        guard !pumping else {
            pumpAgain = true
            return
        }
        pumping = true
        defer { pumping = false }
        var progressed = true
        while progressed || pumpAgain {
            progressed = false
            pumpAgain = false
            while let t = ice.pollTransmit() {
                progressed = true
                sendDatagram(t.bytes, from: t.local, to: t.remote)
            }
            if !relays.isEmpty, pumpRelays() { progressed = true }
            while let event = ice.pollEvent() {
                progressed = true
                handle(event)
            }
            if let dtls, let sctp = dataChannels {
                while let packet = sctp.pollTransmit() {
                    progressed = true
                    do { try dtls.send(packet) } catch { counters.sctpDropped += 1 }
                }
                while let event = sctp.pollEvent() {
                    progressed = true
                    onDataChannelEvent?(event)
                }
            }
            if let dtls {
                while let datagram = dtls.pollTransmit() {
                    progressed = true
                    if let (local, remote) = ice.selectedPair {
                        sendDatagram(datagram, from: local, to: remote)
                    } else if let remote = lastDTLSSource, let local = lastDTLSLocal ?? io.localAddresses.first {
                        sendDatagram(datagram, from: local, to: remote)
                    }
                }
                while let event = dtls.pollEvent() {
                    progressed = true
                    handle(event)
                }
            }
        }
        rearmTimer()
    }

    private func handle(_ event: ICEEvent) {
        // Any ICE event may come with a new selected pair (or none): forwarding snapshots are remade.
        ForwardingEpoch.bump()
        if case .stateChanged(let state) = event { congestion.iceStateChanged(state, now: Moment(loop.now)) }
        if case .selectedPairChanged = event, let dtls, dtlsRole == .client, dtls.state == .new {
            dtls.start(now: loop.now)
        }
        onIceEvent?(event)
    }

    private func handle(_ event: DTLSEvent) {
        defer { ForwardingEpoch.bump() }
        switch event {
        case .connected(let keys, _):
            if let keys {
                do {
                    srtp = try SRTPSession(profile: keys.profile.srtpProfile, localKey: keys.localKey, localSalt: keys.localSalt,
                                           remoteKey: keys.remoteKey, remoteSalt: keys.remoteSalt, backend: srtpBackend)
                } catch {
                    onDTLSFailed?("SRTP set-up failed: \(error)")
                    return
                }
            }
            srtpProfileName = keys?.profile.rawValue
            onDTLSConnected?(keys)
        case .applicationData(let data):
            if let dataChannels {
                dataChannels.handlePacket(data, now: loop.now)
            } else {
                onApplicationData?(data)
            }
        case .closed:
            onDTLSClosed?()
        case .failed(let error):
            onDTLSFailed?(error.description)
        }
    }

    /// Runs after every pump, so once per packet: a timer armed no later than the earliest
    /// deadline is kept (the cores do nothing before their deadlines, and it re-arms as it
    /// fires) — ICE's receiving deadline moves with every packet, and cancelling and scheduling
    /// a timer per packet was a sixth of a receiver's CPU.
    private func rearmTimer() {
        var next = ice.pollTimeout()
        func consider(_ t: ContinuousClock.Instant?) {
            if let t, next.map({ t < $0 }) ?? true { next = t }
        }
        consider(dtls?.pollTimeout())
        consider(dataChannels?.pollTimeout())
        for relay in relays { consider(relay.pollTimeout()) }
        guard let next else { return }
        if let timer {
            if timer.deadline <= next { return }
            loop.cancelTimer(timer.id)
        }
        let id = loop.schedule(at: next) { [weak self] in
            guard let self, !self.closed else { return }
            self.timer = nil
            let now = loop.now
            self.ice.handleTimeout(now: now)
            self.dtls?.handleTimeout(now: now)
            self.dataChannels?.handleTimeout(now: now)
            for relay in self.relays { relay.handleTimeout(now: now) }
            self.pump()
        }
        timer = (id, next)
    }

    func close() {
        guard !closed else { return }
        // SCTP's ABORT goes out inside DTLS before the close_notify.
        if let sctp = dataChannels, let dtls {
            sctp.close()
            while let packet = sctp.pollTransmit() { try? dtls.send(packet) }
        }
        dataChannels = nil
        dtls?.close()
        if let dtls, let (local, remote) = ice.selectedPair {
            while let datagram = dtls.pollTransmit() { sendDatagram(datagram, from: local, to: remote) }
        }
        releaseRelays()
        closed = true
        interfaceMonitor?.stop()
        ForwardingEpoch.bump()
        congestion.close()
        ice.close()
        if let timer { loop.cancelTimer(timer.id) }
        lingerForRelease()
    }

    /// The end of `close`, once the TURN releases are answered or given up.
    func closeSockets() {
        guard !socketsClosed else { return }
        socketsClosed = true
        closeRelayStreams()
        io.close()
        let waiting = socketsClosedWaiters
        socketsClosedWaiters = []
        for resume in waiting { resume() }
    }

    /// Calls `body` (on the loop) once `closeSockets` has run; at once if it has.
    func whenSocketsClosed(_ body: @escaping () -> Void) {
        if socketsClosed || !closed { body() } else { socketsClosedWaiters.append(body) }
    }
}

struct TransportCounters: Sendable {
    var rtpReceived = 0, rtcpReceived = 0, rtpSent = 0, rtcpSent = 0
    var malformedRTP = 0, malformedRTCP = 0, srtpErrors = 0, unknownDatagrams = 0
    var mediaBeforeKeys = 0, sendsWithoutPath = 0, sendErrors = 0
    /// DTLS and media from addresses no authenticated ICE check came from (dropped unread).
    var unverifiedDatagrams = 0
    /// SCTP packets DTLS would not take (not connected, or failed).
    var sctpDropped = 0
}

extension SRTPProtectionProfile {
    var srtpProfile: SRTPProfile {
        switch self {
        case .aes128CmHmacSha1_80: return .aes128CmHmacSha1_80
        case .aeadAes128Gcm: return .aeadAes128Gcm
        }
    }
}
