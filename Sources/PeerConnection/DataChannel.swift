import Foundation
import SCTP
import Locks
import Transport

/// W3C `RTCDataChannelInit`.
public struct DataChannelInit: Sendable, Equatable {
    public var ordered: Bool
    /// At most one of `maxRetransmits` and `maxPacketLifeTime` (milliseconds).
    public var maxRetransmits: UInt16?
    public var maxPacketLifeTime: UInt16?
    public var `protocol`: String
    /// Both sides create the channel themselves with the same `id`: no DCEP handshake.
    public var negotiated: Bool
    public var id: UInt16?

    public init(ordered: Bool = true, maxRetransmits: UInt16? = nil, maxPacketLifeTime: UInt16? = nil,
                protocol: String = "", negotiated: Bool = false, id: UInt16? = nil) {
        self.ordered = ordered
        self.maxRetransmits = maxRetransmits
        self.maxPacketLifeTime = maxPacketLifeTime
        self.protocol = `protocol`
        self.negotiated = negotiated
        self.id = id
    }
}

/// W3C `RTCDataChannelState`.
public enum DataChannelState: String, Sendable {
    case connecting, open, closing, closed
}

/// One message: text or binary, as the sender sent it.
public struct DataChannelMessage: Sendable, Equatable {
    public var data: Data
    public var isBinary: Bool
    public init(data: Data, isBinary: Bool = true) {
        self.data = data
        self.isBinary = isBinary
    }
    public init(_ text: String) { self.init(data: Data(text.utf8), isBinary: false) }
    /// The text of a text message (nil for binary ones or invalid UTF-8).
    public var text: String? { isBinary ? nil : String(data: data, encoding: .utf8) }
}

public enum DataChannelEvent: Sendable, Equatable {
    case open, closing, closed
    /// `bufferedAmount` fell to `bufferedAmountLowThreshold` or below.
    case bufferedAmountLow
    /// SCTP could not send a message or refused the channel (kind `.transport`).
    case error(PeerConnectionError)
}

/// The Google iOS SDK's `RTCDataChannelDelegate` shape; called on the connection's loop thread,
/// where a reply can be sent without a hop. A delegate takes the channel's messages: while one
/// is set they do not go on `messages`.
public protocol DataChannelDelegate: AnyObject, Sendable {
    func dataChannelDidChangeState(_ channel: DataChannel)
    func dataChannel(_ channel: DataChannel, didReceiveMessage message: DataChannelMessage)
    func dataChannel(_ channel: DataChannel, didChangeBufferedAmount amount: Int)
}

extension DataChannelDelegate {
    public func dataChannel(_ channel: DataChannel, didChangeBufferedAmount amount: Int) {}
}

/// W3C `RTCDataChannel`. Any thread may call it; the protocol work runs on the connection's
/// loop thread, where the delegate is called and the streams' items originate.
public final class DataChannel: @unchecked Sendable {
    // @unchecked: `transport` and `stream` are touched on `loop` only; everything else that
    // changes is behind `state`.
    public let label: String
    public let `protocol`: String
    public let ordered: Bool
    public let maxRetransmits: UInt16?
    public let maxPacketLifeTime: UInt16?
    public let negotiated: Bool
    /// Every message received while no delegate is set (a delegate takes them), in order.
    public let messages: AsyncStream<DataChannelMessage>
    /// State changes, `bufferedAmountLow` and errors, in order (the newest 256 wait for a reader).
    public let events: AsyncStream<DataChannelEvent>
    let loop: EventLoop
    private let messageSink: AsyncStream<DataChannelMessage>.Continuation
    private let eventSink: AsyncStream<DataChannelEvent>.Continuation
    private let state: Locked<Shared>

    // loop state
    /// The association once SCTP runs; nil before and after.
    var transport: DataChannelTransport?
    /// Asks the connection to send what the transport queued.
    var flush: (() -> Void)?

    struct Shared {
        var id: UInt16?
        var readyState = DataChannelState.connecting
        var bufferedAmount = 0
        var bufferedAmountLowThreshold = 0
        var remoteMaxMessageSize = 65_536
        weak var delegate: DataChannelDelegate?
        var messagesSent = 0, bytesSent = 0, messagesReceived = 0, bytesReceived = 0
    }

    init(label: String, options: DataChannelInit, id: UInt16?, loop: EventLoop) {
        self.label = label
        self.protocol = options.protocol
        self.ordered = options.ordered
        self.maxRetransmits = options.maxRetransmits
        self.maxPacketLifeTime = options.maxPacketLifeTime
        self.negotiated = options.negotiated
        self.loop = loop
        state = Locked(Shared(id: id))
        (messages, messageSink) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    public var id: UInt16? { state.withLock { $0.id } }
    public var readyState: DataChannelState { state.withLock { $0.readyState } }
    /// The largest message the peer takes (its `a=max-message-size`; 0 = no limit), like W3C
    /// `RTCSctpTransport.maxMessageSize`. Known once the channel is attached to SCTP.
    public var maxMessageSize: Int { state.withLock { $0.remoteMaxMessageSize } }
    /// Bytes passed to `send` that SCTP has not taken yet.
    public var bufferedAmount: Int { state.withLock { $0.bufferedAmount } }
    public var bufferedAmountLowThreshold: Int {
        get { state.withLock { $0.bufferedAmountLowThreshold } }
        set { state.withLock { $0.bufferedAmountLowThreshold = max(0, newValue) } }
    }
    /// State changes, messages and `bufferedAmount` as method calls, on the loop thread. Held
    /// weakly; while set it takes the messages (they do not go on `messages`). For a channel the
    /// peer opens, set it in `PeerConnectionDelegate.peerConnection(_:didOpen:)`: that runs on
    /// the loop thread before any message of the channel is delivered.
    public var delegate: DataChannelDelegate? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Counts for `getStats` (W3C `RTCDataChannelStats`).
    public var statistics: (messagesSent: Int, bytesSent: Int, messagesReceived: Int, bytesReceived: Int) {
        state.withLock { ($0.messagesSent, $0.bytesSent, $0.messagesReceived, $0.bytesReceived) }
    }

    public func send(_ data: Data) throws { try send(SCTP.DataChannelMessage(data: Array(data), isBinary: true)) }
    public func send(_ text: String) throws { try send(SCTP.DataChannelMessage(text: text)) }
    public func send(_ bytes: [UInt8]) throws { try send(SCTP.DataChannelMessage(data: bytes, isBinary: true)) }
    /// Sends `message` as it is: text stays text (even if it is not valid UTF-8), binary binary.
    public func send(_ message: DataChannelMessage) throws {
        try send(SCTP.DataChannelMessage(data: Array(message.data), isBinary: message.isBinary))
    }

    private func send(_ message: SCTP.DataChannelMessage) throws {
        let size = message.data.count
        try state.withLock { s in
            guard s.readyState == .open else {
                throw PeerConnectionError(s.readyState == .connecting ? .invalidState : .closed,
                                          "data channel \(label): cannot send while \(s.readyState.rawValue)")
            }
            if s.remoteMaxMessageSize > 0 && size > s.remoteMaxMessageSize {
                throw PeerConnectionError(.limitExceeded, "data channel \(label): a \(size)-byte message exceeds the peer's max-message-size of \(s.remoteMaxMessageSize)")
            }
            s.bufferedAmount += size
            s.messagesSent += 1
            s.bytesSent += size
        }
        if loop.inLoop {
            transmit(message)
        } else {
            loop.execute { [self] in transmit(message) }
        }
    }

    /// W3C `close()`: queued messages still go, then the stream is reset.
    public func close() {
        let wasOpen = state.withLock { s -> Bool in
            guard s.readyState == .open || s.readyState == .connecting else { return false }
            s.readyState = .closing
            return true
        }
        guard wasOpen else { return }
        eventSink.yield(.closing)
        loop.execute { [self] in
            guard let transport, let id else { return closed() }
            transport.close(id)
            flush?()
        }
    }

    // MARK: loop thread

    private func transmit(_ message: SCTP.DataChannelMessage) {
        guard let transport, let id else { return }
        do {
            try transport.send(message, on: id)
        } catch {
            state.withLock { $0.bufferedAmount -= message.data.count }
            report(.error(PeerConnectionError(.transport, "data channel \(label): \(error)")))
        }
        flush?()
    }

    func attach(_ transport: DataChannelTransport, id: UInt16, remoteMaxMessageSize: Int, flush: @escaping () -> Void) {
        self.transport = transport
        self.flush = flush
        state.withLock {
            $0.id = id
            $0.remoteMaxMessageSize = remoteMaxMessageSize
        }
    }

    func opened() {
        let changed = state.withLock { s -> Bool in
            guard s.readyState == .connecting else { return false }
            s.readyState = .open
            return true
        }
        guard changed else { return }
        report(.open)
        delegate?.dataChannelDidChangeState(self)
    }

    func received(_ message: SCTP.DataChannelMessage) {
        let m = DataChannelMessage(data: Data(message.data), isBinary: message.isBinary)
        let delegate = state.withLock { s in
            s.messagesReceived += 1
            s.bytesReceived += message.data.count
            return s.delegate
        }
        if let delegate { delegate.dataChannel(self, didReceiveMessage: m) } else { messageSink.yield(m) }
    }

    func sent(_ bytes: Int) {
        let (low, amount, delegate) = state.withLock { s -> (Bool, Int, DataChannelDelegate?) in
            let before = s.bufferedAmount
            s.bufferedAmount = max(0, before - bytes)
            return (before > s.bufferedAmountLowThreshold && s.bufferedAmount <= s.bufferedAmountLowThreshold,
                    s.bufferedAmount, s.delegate)
        }
        delegate?.dataChannel(self, didChangeBufferedAmount: amount)
        if low { report(.bufferedAmountLow) }
    }

    func report(_ event: DataChannelEvent) { eventSink.yield(event) }

    /// The peer closed the channel; our queued messages still go out before it is closed.
    func closing() {
        let changed = state.withLock { s -> Bool in
            guard s.readyState == .open || s.readyState == .connecting else { return false }
            s.readyState = .closing
            return true
        }
        guard changed else { return }
        report(.closing)
        delegate?.dataChannelDidChangeState(self)
    }

    func closed() {
        let changed = state.withLock { s -> Bool in
            guard s.readyState != .closed else { return false }
            s.readyState = .closed
            s.bufferedAmount = 0
            return true
        }
        transport = nil
        flush = nil
        guard changed else { return }
        report(.closed)
        delegate?.dataChannelDidChangeState(self)
        eventSink.finish()
        messageSink.finish()
    }
}
