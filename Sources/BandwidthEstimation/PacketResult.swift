/// One sent packet as transport-cc feedback reported it.
public struct PacketResult: Sendable, Equatable, Hashable {
    /// Transport-wide sequence number extended past 16-bit wraps.
    public var transportSequence: Int64
    /// Bytes on the wire as given to `onPacketSent`.
    public var size: Int
    public var sendTime: Moment
    /// Receive time on the remote clock in microseconds (only differences mean anything);
    /// nil when the feedback reported the packet lost.
    public var arrivalMicroseconds: Int64?
    /// The probe cluster the packet was sent in, if any.
    public var probeClusterID: Int?

    public var isReceived: Bool { arrivalMicroseconds != nil }

    public init(transportSequence: Int64, size: Int, sendTime: Moment,
                arrivalMicroseconds: Int64?, probeClusterID: Int? = nil) {
        self.transportSequence = transportSequence
        self.size = size
        self.sendTime = sendTime
        self.arrivalMicroseconds = arrivalMicroseconds
        self.probeClusterID = probeClusterID
    }
}
