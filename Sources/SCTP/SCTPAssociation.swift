import CUsrSCTP
import Glibc

/// What the association reports.
public enum SCTPEvent: Sendable, Equatable {
    case connected(outboundStreams: Int, inboundStreams: Int)
    case message(stream: UInt16, ppid: UInt32, data: [UInt8])
    /// The peer reset its outgoing side of these streams (it closed them, RFC 8831 §6.7).
    case incomingStreamsReset([UInt16])
    /// Our reset of these outgoing streams completed (or, with `failed`, was refused).
    case outgoingStreamsReset([UInt16], failed: Bool)
    /// A message larger than we accept was dropped.
    case oversizedMessage(stream: UInt16, size: Int)
    case closed(String)
}

/// Partial reliability of one message (RFC 3758 via usrsctp's PR-SCTP policies).
public enum SCTPReliability: Sendable, Equatable {
    case reliable
    case maxRetransmits(UInt32)
    case lifetime(milliseconds: UInt32)
}

public enum SCTPSendOutcome: Sendable, Equatable {
    case accepted(Int)
    case wouldBlock
    case failed(String)
}

/// One SCTP association over usrsctp in AF_CONN mode, sans-I/O: DTLS application data in
/// with `handlePacket`, time in with `handleTimeout`, packets for DTLS out of
/// `pollTransmit`, events out of `pollEvent`. One owner thread drives it.
public final class SCTPAssociation {
    public enum State: Sendable { case connecting, connected, closed }

    /// usrsctp has no deadline query: tick at this period while the association lives.
    public static let tick: Duration = .milliseconds(10)
    /// Each SCTP packet travels in one DTLS record inside one UDP datagram.
    public static let mtu: UInt32 = 1200

    public private(set) var state = State.connecting
    public let maxReceiveMessageSize: Int
    private let socket: OpaquePointer
    private let id: UInt
    private let outbox: SCTPOutbox
    private var transmitQueue: [[UInt8]] = []
    private var transmitHead = 0
    private var events = EventQueue<SCTPEvent>()
    private var readBuffer = [UInt8](repeating: 0, count: 1 << 16)
    /// Messages usrsctp hands over in parts (partial delivery), by stream.
    private var partial: [UInt16: [UInt8]] = [:]
    private var oversized: [UInt16: Int] = [:]
    private var lastTick: ContinuousClock.Instant

    public init(localPort: UInt16 = 5000, remotePort: UInt16 = 5000, streams: UInt16 = 1024,
                maxReceiveMessageSize: Int = 1 << 20, sendBufferSize: UInt32 = 1 << 20,
                now: ContinuousClock.Instant) throws(SCTPError) {
        let (id, outbox) = UsrSCTP.register()
        var error: Int32 = 0
        guard let socket = swiftrtc_sctp_open(UnsafeMutableRawPointer(bitPattern: id), localPort, remotePort, streams,
                                              sendBufferSize, Self.mtu - 12, &error) else {
            UsrSCTP.unregister(id)
            throw SCTPError("usrsctp socket set-up failed at step \(error / 1000): \(String(cString: strerror(error % 1000)))")
        }
        self.socket = socket
        self.id = id
        self.outbox = outbox
        self.maxReceiveMessageSize = maxReceiveMessageSize
        self.lastTick = now
        UsrSCTP.advance(id, to: now)
    }

    deinit { close() }

    // MARK: input

    /// One SCTP packet that arrived as DTLS application data.
    public func handlePacket(_ packet: [UInt8], now: ContinuousClock.Instant) {
        guard state != .closed, !packet.isEmpty else { return }
        packet.withUnsafeBytes { usrsctp_conninput(UnsafeMutableRawPointer(bitPattern: id), $0.baseAddress, $0.count, 0) }
        read()
    }

    public func pollTimeout() -> ContinuousClock.Instant? {
        state == .closed ? nil : lastTick.advanced(by: Self.tick)
    }

    public func handleTimeout(now: ContinuousClock.Instant) {
        guard state != .closed else { return }
        lastTick = now
        UsrSCTP.advance(id, to: now)
        read()
    }

    // MARK: output

    public func pollTransmit() -> [UInt8]? {
        if transmitHead == transmitQueue.count {
            transmitQueue.removeAll(keepingCapacity: true)
            transmitHead = 0
            let fresh = outbox.packets.withLock { packets -> [[UInt8]] in
                defer { packets.removeAll(keepingCapacity: true) }
                return packets
            }
            guard !fresh.isEmpty else { return nil }
            transmitQueue = fresh
        }
        defer { transmitHead += 1 }
        return transmitQueue[transmitHead]
    }

    public func pollEvent() -> SCTPEvent? { events.poll() }

    /// Offers (part of) a message to usrsctp; `end` when `bytes` finishes it. usrsctp may take
    /// fewer bytes than offered when its send buffer fills: offer the rest later, same stream.
    public func send(_ bytes: UnsafeRawBufferPointer, stream: UInt16, ppid: UInt32, unordered: Bool,
                     reliability: SCTPReliability, end: Bool) -> SCTPSendOutcome {
        guard state == .connected else { return .failed("the SCTP association is not connected") }
        let (policy, value): (UInt16, UInt32)
        switch reliability {
        case .reliable: (policy, value) = (0, 0)
        case .maxRetransmits(let n): (policy, value) = (UInt16(SCTP_PR_SCTP_RTX), n)
        case .lifetime(let ms): (policy, value) = (UInt16(SCTP_PR_SCTP_TTL), ms)
        }
        let n = swiftrtc_sctp_send(socket, bytes.baseAddress, bytes.count, stream, ppid, unordered ? 1 : 0, policy, value,
                                   end ? 1 : 0)
        if n >= 0 { return .accepted(n) }
        let code = swiftrtc_errno()
        if code == EWOULDBLOCK || code == EAGAIN { return .wouldBlock }
        return .failed("usrsctp_sendv on stream \(stream): \(String(cString: strerror(code)))")
    }

    /// Resets our outgoing side of `streams`; false when usrsctp is busy with another reset
    /// (try again later).
    public func resetStreams(_ streams: [UInt16]) -> Bool {
        guard !streams.isEmpty else { return true }
        guard state == .connected else { return false }
        let rc = streams.withUnsafeBufferPointer { swiftrtc_sctp_reset_streams(socket, $0.baseAddress, UInt16(clamping: $0.count)) }
        return rc == 0
    }

    /// Aborts the association (linger 0, as libwebrtc closes it) and frees the socket.
    public func close() {
        guard !closedSocket else { return }
        closedSocket = true
        swiftrtc_sctp_close(socket, UnsafeMutableRawPointer(bitPattern: id))
        UsrSCTP.unregister(id)
        state = .closed
    }
    private var closedSocket = false

    // MARK: reading

    private func read() {
        while !closedSocket {
            var stream: UInt16 = 0, ppid: UInt32 = 0, flags: Int32 = 0
            let n = readBuffer.withUnsafeMutableBytes {
                swiftrtc_sctp_receive(socket, $0.baseAddress, $0.count, &stream, &ppid, &flags)
            }
            if n < 0 { return }
            if n == 0 {
                finish("the peer shut the association down")
                return
            }
            let complete = flags & Int32(SWIFTRTC_MSG_EOR) != 0
            if flags & Int32(SWIFTRTC_MSG_NOTIFICATION) != 0 {
                notification(Array(readBuffer[0..<n]))
            } else {
                data(readBuffer[0..<n], stream: stream, ppid: ppid, complete: complete)
            }
        }
    }

    private func data(_ bytes: ArraySlice<UInt8>, stream: UInt16, ppid: UInt32, complete: Bool) {
        if let dropped = oversized[stream] {
            oversized[stream] = complete ? nil : dropped + bytes.count
            if complete { events.append(.oversizedMessage(stream: stream, size: dropped + bytes.count)) }
            return
        }
        if complete && partial[stream] == nil {
            events.append(.message(stream: stream, ppid: ppid, data: Array(bytes)))
            return
        }
        var buffer = partial.removeValue(forKey: stream) ?? []
        if buffer.count + bytes.count > maxReceiveMessageSize {
            if complete {
                events.append(.oversizedMessage(stream: stream, size: buffer.count + bytes.count))
            } else {
                oversized[stream] = buffer.count + bytes.count
            }
            return
        }
        buffer += bytes
        if complete {
            events.append(.message(stream: stream, ppid: ppid, data: buffer))
        } else {
            partial[stream] = buffer
        }
    }

    /// Notifications arrive in host byte order (usrsctp.h's sctp_notification layouts).
    private func notification(_ b: [UInt8]) {
        func u16(_ at: Int) -> UInt16? {
            guard at + 2 <= b.count else { return nil }
            return b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }
        }
        guard let type = u16(0), let flags = u16(2) else { return }
        switch Int32(type) {
        case SCTP_ASSOC_CHANGE:
            guard let sacState = u16(8) else { return }
            switch Int32(sacState) {
            case SCTP_COMM_UP, SCTP_RESTART:
                state = .connected
                events.append(.connected(outboundStreams: Int(u16(12) ?? 0), inboundStreams: Int(u16(14) ?? 0)))
            case SCTP_COMM_LOST: finish("the SCTP association was lost (peer unreachable or aborted)")
            case SCTP_SHUTDOWN_COMP: finish("the SCTP association was shut down")
            case SCTP_CANT_STR_ASSOC: finish("the SCTP association could not be started")
            default: break
            }
        case SCTP_STREAM_RESET_EVENT:
            let count = max(0, (b.count - 12) / 2)
            let streams = (0..<count).compactMap { u16(12 + 2 * $0) }
            let failed = Int32(flags) & (SCTP_STREAM_RESET_DENIED | SCTP_STREAM_RESET_FAILED) != 0
            if Int32(flags) & SCTP_STREAM_RESET_INCOMING_SSN != 0 && !failed {
                for s in streams { partial[s] = nil }
                events.append(.incomingStreamsReset(streams))
            }
            if Int32(flags) & SCTP_STREAM_RESET_OUTGOING_SSN != 0 || failed {
                events.append(.outgoingStreamsReset(streams, failed: failed))
            }
        default:
            break
        }
    }

    /// The association is over: free the socket now, so it neither leads the stack's clock
    /// nor waits for a close that may come late.
    private func finish(_ reason: String) {
        guard state != .closed else { return }
        state = .closed
        events.append(.closed(reason))
        close()
    }
}
