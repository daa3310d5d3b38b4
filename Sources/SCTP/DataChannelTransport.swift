/// RFC 8831/8832 on one SCTP association: DCEP open/ack, stream ids by DTLS role, one send
/// queue in front of usrsctp (an explicit-EOR message that usrsctp took in part must finish
/// before any other goes), stream resets on close. Sans-I/O like the association it drives.
public final class DataChannelTransport {
    /// Messages we accept (our `a=max-message-size`): 1 MiB, so two SwiftRTC peers go past
    /// browsers' 256 KiB; a peer with a smaller limit gets no more than it says.
    public static let localMaxMessageSize = 1 << 20

    public let association: SCTPAssociation
    /// DTLS client: even stream ids; server: odd (RFC 8832 §6).
    public let isDTLSClient: Bool
    /// The peer's `a=max-message-size` (0 = no limit; absent = 64 KiB, RFC 8841 §6).
    public var remoteMaxMessageSize: Int
    private var channels: [UInt16: Channel] = [:]
    private var queue: [Outgoing] = []
    private var queueHead = 0
    private var events = EventQueue<DataChannelTransportEvent>()
    private var streamLimit = 1024
    /// Streams the peer reset that we have no channel on (a negotiated one only it made): we
    /// reset ours too, so its channel can finish closing.
    private var orphanResets: Set<UInt16> = []
    private var connected = false

    struct Channel {
        var parameters: DataChannelParameters
        var state: DataChannelState
        /// Until the peer's ACK (or any data from it), messages go ordered (RFC 8832 §6).
        var acknowledged: Bool
        var queuedBytes = 0
        var resetWanted = false, resetRequested = false, outgoingReset = false, incomingReset = false
    }

    struct Outgoing {
        var stream: UInt16
        var ppid: UInt32
        var unordered: Bool
        var reliability: SCTPReliability
        var data: [UInt8]
        var offset = 0
        /// The app's bytes count in bufferedAmount; DCEP messages and the stand-in byte of an
        /// empty message do not.
        var counted: Bool
    }

    public init(isDTLSClient: Bool, remoteMaxMessageSize: Int = 65_536, localPort: UInt16 = 5000,
                remotePort: UInt16 = 5000, now: ContinuousClock.Instant) throws(SCTPError) {
        self.isDTLSClient = isDTLSClient
        self.remoteMaxMessageSize = remoteMaxMessageSize
        association = try SCTPAssociation(localPort: localPort, remotePort: remotePort,
                                          maxReceiveMessageSize: Self.localMaxMessageSize, now: now)
    }

    public var isConnected: Bool { connected }

    // MARK: channels

    /// Opens a channel; `id` for negotiated channels (or to choose one). Returns its stream id.
    public func open(_ parameters: DataChannelParameters, id: UInt16? = nil) throws(SCTPError) -> UInt16 {
        guard association.state != .closed else { throw SCTPError("the SCTP association is closed") }
        if parameters.maxRetransmits != nil && parameters.maxPacketLifeTime != nil {
            throw SCTPError("maxRetransmits and maxPacketLifeTime cannot both be set")
        }
        let stream: UInt16
        if let id {
            guard id < 65535 else { throw SCTPError("data channel id \(id) is out of range (0...65534)") }
            guard channels[id] == nil else { throw SCTPError("data channel id \(id) is in use") }
            stream = id
        } else {
            guard let free = freeStream() else { throw SCTPError("no free data channel id (\(channels.count) open)") }
            stream = free
        }
        channels[stream] = Channel(parameters: parameters, state: .connecting, acknowledged: parameters.negotiated)
        if !parameters.negotiated {
            queue.append(Outgoing(stream: stream, ppid: PPID.dcep, unordered: false, reliability: .reliable,
                                  data: DCEPMessage.open(parameters.open).bytes, counted: false))
        }
        if connected { openReady() }
        flush()
        return stream
    }

    private func freeStream() -> UInt16? {
        var candidate = isDTLSClient ? 0 : 1
        while candidate < min(streamLimit, 65535) {
            if channels[UInt16(candidate)] == nil { return UInt16(candidate) }
            candidate += 2
        }
        return nil
    }

    /// Queues one message; throws if the channel is not open or the peer would not take it.
    public func send(_ message: DataChannelMessage, on stream: UInt16) throws(SCTPError) {
        guard let channel = channels[stream], channel.state == .open || channel.state == .connecting else {
            throw SCTPError("data channel \(stream) is not open")
        }
        if remoteMaxMessageSize > 0 && message.data.count > remoteMaxMessageSize {
            throw SCTPError("a \(message.data.count)-byte message exceeds the peer's max-message-size of \(remoteMaxMessageSize)")
        }
        let p = channel.parameters
        queue.append(Outgoing(stream: stream, ppid: message.ppid, unordered: !p.ordered && channel.acknowledged,
                              reliability: p.reliability, data: message.data.isEmpty ? [0] : message.data,
                              counted: !message.data.isEmpty))
        channels[stream]?.queuedBytes += message.data.count
        flush()
    }

    /// Bytes of the channel's messages usrsctp has not taken yet.
    public func bufferedAmount(_ stream: UInt16) -> Int { channels[stream]?.queuedBytes ?? 0 }

    public func state(_ stream: UInt16) -> DataChannelState { channels[stream]?.state ?? .closed }

    /// RFC 8831 §6.7: once its queued messages are out, reset the stream's outgoing side; the
    /// peer answers with its own reset and the channel is closed.
    public func close(_ stream: UInt16) {
        guard var channel = channels[stream], channel.state != .closing, channel.state != .closed else { return }
        channel.state = .closing
        channel.resetWanted = true
        channels[stream] = channel
        flush()
    }

    // MARK: driving

    public func handlePacket(_ packet: [UInt8], now: ContinuousClock.Instant) {
        association.handlePacket(packet, now: now)
        process()
    }

    public func handleTimeout(now: ContinuousClock.Instant) {
        association.handleTimeout(now: now)
        process()
    }

    public func pollTimeout() -> ContinuousClock.Instant? { association.pollTimeout() }
    public func pollTransmit() -> [UInt8]? { association.pollTransmit() }

    public func pollEvent() -> DataChannelTransportEvent? { events.poll() }

    /// Aborts the association; every channel is closed.
    public func close() {
        association.close()
        closeAll("closed")
    }

    // MARK: internals

    private func process() {
        while let event = association.pollEvent() {
            switch event {
            case .connected(let outbound, let inbound):
                connected = true
                streamLimit = max(1, min(outbound, inbound))
                events.append(.connected)
                openReady()
            case .message(let stream, let ppid, let data):
                received(data, stream: stream, ppid: ppid)
            case .incomingStreamsReset(let streams):
                for s in streams where channels[s] == nil { orphanResets.insert(s) }
                for s in streams where channels[s] != nil {
                    channels[s]?.incomingReset = true
                    if channels[s]?.state != .closing {
                        channels[s]?.state = .closing
                        events.append(.closing(id: s))
                    }
                    channels[s]?.resetWanted = true
                    finishClose(s)
                }
            case .outgoingStreamsReset(let streams, let failed):
                for s in streams where channels[s] != nil {
                    channels[s]?.outgoingReset = true
                    // Closed once the peer resets its side too (RFC 8831 §6.7), so the id is
                    // not reused while its reset is on the way; a refused reset ends it now.
                    if failed { channels[s]?.incomingReset = true }
                    finishClose(s)
                }
            case .oversizedMessage(let stream, let size):
                events.append(.error(id: stream, "dropped a \(size)-byte message: larger than our max-message-size \(Self.localMaxMessageSize)"))
            case .closed(let reason):
                closeAll(reason)
            }
        }
        flush()
    }

    private func openReady() {
        for (id, channel) in channels.sorted(by: { $0.key < $1.key }) where channel.state == .connecting {
            // A channel whose OPEN is still queued opens when usrsctp takes it (in flush).
            if channel.parameters.negotiated || !queue[queueHead...].contains(where: { $0.stream == id && $0.ppid == PPID.dcep }) {
                channels[id]?.state = .open
                events.append(.open(id: id))
            }
        }
    }

    private func finishClose(_ stream: UInt16) {
        guard let c = channels[stream], c.outgoingReset, c.incomingReset else { return }
        channels[stream] = nil
        events.append(.channelClosed(id: stream))
    }

    private func closeAll(_ reason: String) {
        for id in channels.keys.sorted() { events.append(.channelClosed(id: id)) }
        channels.removeAll()
        queue.removeAll()
        queueHead = 0
        if connected { events.append(.closed(reason)) }
        connected = false
    }

    private func received(_ data: [UInt8], stream: UInt16, ppid: UInt32) {
        if ppid == PPID.dcep {
            let message: DCEPMessage
            do { message = try DCEPMessage(parsing: data) } catch {
                events.append(.error(id: stream, error.description))
                return
            }
            switch message {
            case .ack:
                channels[stream]?.acknowledged = true
            case .open(let open):
                guard channels[stream] == nil else {
                    events.append(.error(id: stream, "DATA_CHANNEL_OPEN for stream \(stream), which is in use"))
                    return
                }
                let parameters = DataChannelParameters(open)
                channels[stream] = Channel(parameters: parameters, state: .open, acknowledged: true)
                queue.append(Outgoing(stream: stream, ppid: PPID.dcep, unordered: false, reliability: .reliable,
                                      data: DCEPMessage.ack.bytes, counted: false))
                events.append(.remoteOpened(id: stream, parameters))
            }
            return
        }
        guard let channel = channels[stream], channel.state == .open || channel.state == .closing else {
            events.append(.error(id: stream, "a message on stream \(stream), which has no open channel"))
            return
        }
        channels[stream]?.acknowledged = true
        let message: DataChannelMessage
        switch ppid {
        case PPID.string: message = DataChannelMessage(data: data, isBinary: false)
        case PPID.binary: message = DataChannelMessage(data: data, isBinary: true)
        case PPID.emptyString: message = DataChannelMessage(data: [], isBinary: false)
        case PPID.emptyBinary: message = DataChannelMessage(data: [], isBinary: true)
        default:
            events.append(.error(id: stream, "a message with unknown PPID \(ppid) on stream \(stream)"))
            return
        }
        events.append(.message(id: stream, message))
    }

    /// Hands queued messages to usrsctp until it pushes back; then resets what waits for it.
    private func flush() {
        guard connected, association.state == .connected else { return }
        while queueHead < queue.count {
            var item = queue[queueHead]
            if channels[item.stream] == nil {   // closed under it
                queueHead += 1
                continue
            }
            let outcome = item.data.withUnsafeBytes { all in
                association.send(UnsafeRawBufferPointer(rebasing: all[item.offset...]), stream: item.stream, ppid: item.ppid,
                                 unordered: item.unordered, reliability: item.reliability, end: true)
            }
            switch outcome {
            case .accepted(let n):
                item.offset += n
                if item.counted {
                    channels[item.stream]?.queuedBytes -= n
                    events.append(.sent(id: item.stream, bytes: n))
                }
                if item.offset < item.data.count {
                    queue[queueHead] = item
                    compactQueue()
                    return resetWaiting()
                }
                queueHead += 1
                if item.ppid == PPID.dcep, channels[item.stream]?.state == .connecting {
                    channels[item.stream]?.state = .open
                    events.append(.open(id: item.stream))
                }
            case .wouldBlock:
                compactQueue()
                return resetWaiting()
            case .failed(let why):
                queueHead += 1
                events.append(.error(id: item.stream, why))
            }
        }
        compactQueue()
        resetWaiting()
    }

    private func compactQueue() {
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueHead = 0
        } else if queueHead > 1024 {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
    }

    private func resetWaiting() {
        let pending = queue[queueHead...]
        let ready = channels.filter { id, c in
            c.resetWanted && !c.resetRequested && !pending.contains { $0.stream == id }
        }.keys.sorted()
        let streams = ready + orphanResets.sorted()
        guard !streams.isEmpty else { return }
        if association.resetStreams(streams) {
            for id in ready { channels[id]?.resetRequested = true }
            orphanResets.removeAll()
        }
    }
}
