/// A malformed RTP packet: what was wrong and the byte offset where it was found.
public struct RTPError: Error, CustomStringConvertible, Sendable, Equatable {
    public var offset: Int
    public var message: String

    public init(offset: Int, _ message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "RTP: \(message) at offset \(offset)" }
}

/// A malformed RTCP compound packet: what was wrong and the byte offset (from the start of the
/// compound) where it was found.
public struct RTCPError: Error, CustomStringConvertible, Sendable, Equatable {
    public var offset: Int
    public var message: String

    public init(offset: Int, _ message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "RTCP: \(message) at offset \(offset)" }
}
