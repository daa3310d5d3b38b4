import DTLS
import SCTP
import SDP

/// What the connection knows about its data channels (loop thread).
struct DataChannelSession {
    /// An application m-line goes into our next offer.
    var wanted = false
    var mid: String?
    /// The answer accepted an application m-line: SCTP starts once DTLS is up.
    var negotiated = false
    var remotePort: UInt16 = 5000
    /// RFC 8841 §6: without the attribute, 64 KiB.
    var remoteMaxMessageSize = 65_536
    /// Channels created before SCTP runs, in order; they get their ids when it starts.
    var pending: [DataChannel] = []
    var byStream: [UInt16: DataChannel] = [:]
}

extension PeerConnection {
    /// W3C `createDataChannel(label, init)`. The first one adds an application m-line to the
    /// next offer; on a connected association the channel opens at once.
    public func createDataChannel(_ label: String, _ options: DataChannelInit = DataChannelInit()) async throws -> DataChannel {
        if label.utf8.count > 65535 || options.protocol.utf8.count > 65535 {
            throw PeerConnectionError("createDataChannel: label and protocol are limited to 65535 bytes")
        }
        if options.maxRetransmits != nil && options.maxPacketLifeTime != nil {
            throw PeerConnectionError("createDataChannel: maxRetransmits and maxPacketLifeTime cannot both be set")
        }
        if options.negotiated && options.id == nil {
            throw PeerConnectionError("createDataChannel: a negotiated channel needs an id")
        }
        if options.id == 65535 { throw PeerConnectionError("createDataChannel: id 65535 is reserved") }
        return try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError("createDataChannel: the connection is closed") }
            let channel = DataChannel(label: label, options: options, id: options.id, loop: loop)
            dataChannels.wanted = true
            updateNegotiationNeeded()
            if let sctp = transport?.dataChannels {
                open(channel, on: sctp)
                transport?.pump()
            } else {
                dataChannels.pending.append(channel)
            }
            return channel
        }
    }

    /// The application m-line of our offer (nil without data channels).
    func offeredDataSection(usedMids: inout Set<String>) -> LocalMediaSection? {
        guard dataChannels.wanted else { return nil }
        let mid: String
        if let existing = dataChannels.mid {
            mid = existing
        } else {
            var next = 0
            while usedMids.contains(String(next)) { next += 1 }
            mid = String(next)
            dataChannels.mid = mid
        }
        usedMids.insert(mid)
        return LocalMediaSection(kind: "application", mid: mid, rejected: false, proto: "UDP/DTLS/SCTP", direction: .sendrecv,
                                 codecs: [], extensions: [], sender: nil)
    }

    /// Our answer to an offered application m-line: taken if it is SCTP over DTLS for WebRTC.
    func answerDataSection(for m: MediaDescription, mid: String) -> LocalMediaSection? {
        guard m.kind == "application", m.port != 0, m.proto.uppercased().hasSuffix("DTLS/SCTP"),
              m.formats.contains("webrtc-datachannel") else { return nil }
        return LocalMediaSection(kind: "application", mid: mid, rejected: false, proto: m.proto, direction: .sendrecv,
                                 codecs: [], extensions: [], sender: nil)
    }

    /// From the finished negotiation: whether SCTP runs, to which port, with which size limit.
    func negotiateDataChannels(answer: SDP.SessionDescription, remote: SDP.SessionDescription) {
        guard let index = answer.media.firstIndex(where: { $0.kind == "application" && $0.port != 0 }) else { return }
        let m = answer.media[index]
        dataChannels.negotiated = true
        dataChannels.wanted = true
        dataChannels.mid = m.mid ?? String(index)
        if let theirs = remote.media.first(where: { $0.kind == "application" && $0.port != 0 }) {
            dataChannels.remotePort = theirs.sctpPort.map { UInt16(clamping: $0) } ?? 5000
            dataChannels.remoteMaxMessageSize = theirs.maxMessageSize ?? 65_536
        }
    }

    /// DTLS is up: start the association and open the channels made so far.
    func startDataChannels() {
        guard dataChannels.negotiated, let transport, transport.dataChannels == nil, let role = transport.dtlsRole else { return }
        let sctp: DataChannelTransport
        do {
            sctp = try DataChannelTransport(isDTLSClient: role == .client, remoteMaxMessageSize: dataChannels.remoteMaxMessageSize,
                                            remotePort: dataChannels.remotePort, now: loop.now)
        } catch {
            emit(.error("data channels: \(error)"))
            return
        }
        transport.dataChannels = sctp
        transport.onDataChannelEvent = { [weak self] in self?.handle($0) }   // weak: see startTransport
        for channel in dataChannels.pending where channel.readyState != .closed { open(channel, on: sctp) }
        dataChannels.pending.removeAll()
    }

    private func open(_ channel: DataChannel, on sctp: DataChannelTransport) {
        let parameters = DataChannelParameters(label: channel.label, protocol: channel.protocol, ordered: channel.ordered,
                                               maxRetransmits: channel.maxRetransmits, maxPacketLifeTime: channel.maxPacketLifeTime,
                                               negotiated: channel.negotiated)
        do {
            let id = try sctp.open(parameters, id: channel.id)
            attach(channel, id: id, to: sctp)
        } catch {
            channel.report(.error("data channel \(channel.label): \(error)"))
            channel.closed()
        }
    }

    private func attach(_ channel: DataChannel, id: UInt16, to sctp: DataChannelTransport) {
        channel.attach(sctp, id: id, remoteMaxMessageSize: dataChannels.remoteMaxMessageSize) { [weak self] in
            self?.transport?.pump()
        }
        dataChannels.byStream[id] = channel
    }

    private func handle(_ event: DataChannelTransportEvent) {
        switch event {
        case .connected:
            break
        case .remoteOpened(let id, let p):
            let options = DataChannelInit(ordered: p.ordered, maxRetransmits: p.maxRetransmits,
                                          maxPacketLifeTime: p.maxPacketLifeTime, protocol: p.protocol)
            let channel = DataChannel(label: p.label, options: options, id: id, loop: loop)
            guard let sctp = transport?.dataChannels else { return }
            attach(channel, id: id, to: sctp)
            channel.opened()
            emit(.dataChannel(channel))
        case .open(let id):
            dataChannels.byStream[id]?.opened()
        case .message(let id, let message):
            dataChannels.byStream[id]?.received(message)
        case .sent(let id, let bytes):
            dataChannels.byStream[id]?.sent(bytes)
        case .closing(let id):
            dataChannels.byStream[id]?.closing()
        case .channelClosed(let id):
            dataChannels.byStream.removeValue(forKey: id)?.closed()
        case .error(let id, let why):
            if let id, let channel = dataChannels.byStream[id] { channel.report(.error(why)) } else { emit(.error("data channels: \(why)")) }
        case .closed(let reason):
            if !closed { emit(.error("data channels: \(reason)")) }
            closeDataChannels()
        }
    }

    func closeDataChannels() {
        let all = dataChannels.pending + dataChannels.byStream.keys.sorted().compactMap { dataChannels.byStream[$0] }
        dataChannels.pending.removeAll()
        dataChannels.byStream.removeAll()
        for channel in all { channel.closed() }
    }

    /// W3C `RTCDataChannelStats` for each channel.
    func dataChannelStats(into report: inout StatsReport) {
        for (id, channel) in dataChannels.byStream.sorted(by: { $0.key < $1.key }) {
            let c = channel.statistics
            var s = RTCStats(id: "D\(id)", type: "data-channel")
            s["label"] = .string(channel.label)
            s["protocol"] = .string(channel.protocol)
            s["dataChannelIdentifier"] = .int(Int(id))
            s["state"] = .string(channel.readyState.rawValue)
            s["messagesSent"] = .int(c.messagesSent)
            s["bytesSent"] = .int(c.bytesSent)
            s["messagesReceived"] = .int(c.messagesReceived)
            s["bytesReceived"] = .int(c.bytesReceived)
            report.add(s)
        }
    }
}
