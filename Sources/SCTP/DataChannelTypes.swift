/// What a data channel is, as both ends agree on it (W3C `RTCDataChannelInit` less the id).
public struct DataChannelParameters: Sendable, Equatable {
    public var label: String
    public var `protocol`: String
    public var ordered: Bool
    /// At most one of these two is set (partial reliability, RFC 8831 §6.6).
    public var maxRetransmits: UInt16?
    public var maxPacketLifeTime: UInt16?
    public var negotiated: Bool
    public var priority: UInt16

    public init(label: String, protocol: String = "", ordered: Bool = true, maxRetransmits: UInt16? = nil,
                maxPacketLifeTime: UInt16? = nil, negotiated: Bool = false, priority: UInt16 = 256) {
        self.label = label
        self.protocol = `protocol`
        self.ordered = ordered
        self.maxRetransmits = maxRetransmits
        self.maxPacketLifeTime = maxPacketLifeTime
        self.negotiated = negotiated
        self.priority = priority
    }

    var reliability: SCTPReliability {
        if let n = maxRetransmits { return .maxRetransmits(UInt32(n)) }
        if let ms = maxPacketLifeTime { return .lifetime(milliseconds: UInt32(ms)) }
        return .reliable
    }

    var open: DataChannelOpen {
        let type: DCEPChannelType, parameter: UInt32
        switch (reliability, ordered) {
        case (.reliable, true): (type, parameter) = (.reliable, 0)
        case (.reliable, false): (type, parameter) = (.reliableUnordered, 0)
        case (.maxRetransmits(let n), true): (type, parameter) = (.partialReliableRexmit, n)
        case (.maxRetransmits(let n), false): (type, parameter) = (.partialReliableRexmitUnordered, n)
        case (.lifetime(let ms), true): (type, parameter) = (.partialReliableTimed, ms)
        case (.lifetime(let ms), false): (type, parameter) = (.partialReliableTimedUnordered, ms)
        }
        return DataChannelOpen(channelType: type, priority: priority, reliabilityParameter: parameter, label: label, protocol: `protocol`)
    }

    init(_ open: DataChannelOpen) {
        let parameter = UInt16(clamping: open.reliabilityParameter)
        let rexmit = open.channelType == .partialReliableRexmit || open.channelType == .partialReliableRexmitUnordered
        let timed = open.channelType == .partialReliableTimed || open.channelType == .partialReliableTimedUnordered
        self.init(label: open.label, protocol: open.protocol, ordered: open.channelType.ordered,
                  maxRetransmits: rexmit ? parameter : nil, maxPacketLifeTime: timed ? parameter : nil,
                  negotiated: false, priority: open.priority)
    }
}

/// One message: text (PPID 51/56) or binary (53/57).
public struct DataChannelMessage: Sendable, Equatable {
    public var data: [UInt8]
    public var isBinary: Bool
    public init(data: [UInt8], isBinary: Bool) {
        self.data = data
        self.isBinary = isBinary
    }
    public init(text: String) { self.init(data: Array(text.utf8), isBinary: false) }
    public var text: String? { isBinary ? nil : String(validating: data, as: UTF8.self) }

    var ppid: UInt32 {
        switch (isBinary, data.isEmpty) {
        case (false, false): return PPID.string
        case (true, false): return PPID.binary
        case (false, true): return PPID.emptyString
        case (true, true): return PPID.emptyBinary
        }
    }
}

public enum DataChannelState: String, Sendable {
    case connecting, open, closing, closed
}

/// What the data channel layer reports to its owner (the PeerConnection), per stream id.
public enum DataChannelTransportEvent: Sendable, Equatable {
    case connected
    /// The peer opened a channel with DATA_CHANNEL_OPEN.
    case remoteOpened(id: UInt16, DataChannelParameters)
    /// Our channel is open (OPEN sent, or negotiated and the association is up).
    case open(id: UInt16)
    case message(id: UInt16, DataChannelMessage)
    /// usrsctp took `bytes` more of the channel's queued messages.
    case sent(id: UInt16, bytes: Int)
    /// The peer reset its side of the stream (it closed the channel); `channelClosed` follows.
    case closing(id: UInt16)
    case channelClosed(id: UInt16)
    case error(id: UInt16?, String)
    case closed(String)
}
