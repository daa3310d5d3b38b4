/// Extends 16-bit RTP sequence numbers to a monotonic 64-bit count. Each value is placed at
/// the distance closest to the previous one (±32767; exactly half the space counts as
/// backwards), so wraps forward and reordered packets from before a wrap both land right.
public struct SequenceNumberUnwrapper: Sendable, Equatable {
    var last: Int64?

    public init() {}

    /// The previous extended value, if any.
    public var lastUnwrapped: Int64? { last }

    public mutating func unwrap(_ sequence: UInt16) -> Int64 {
        guard let previous = last else {
            last = Int64(sequence)
            return Int64(sequence)
        }
        let delta = Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: previous)))
        let value = previous + delta
        last = value
        return value
    }

    /// The extended value `sequence` would get, without updating the state.
    public func peek(_ sequence: UInt16) -> Int64 {
        guard let previous = last else { return Int64(sequence) }
        return previous + Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: previous)))
    }
}

/// The same for 32-bit RTP timestamps.
public struct TimestampUnwrapper: Sendable, Equatable {
    var last: Int64?

    public init() {}

    public mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        guard let previous = last else {
            last = Int64(timestamp)
            return Int64(timestamp)
        }
        let delta = Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: previous)))
        let value = previous + delta
        last = value
        return value
    }
}

extension UInt16 {
    /// RFC 3550 serial arithmetic on sequence numbers: whether this one comes after `other`
    /// (within half the sequence space).
    @inlinable public func isNewer(than other: UInt16) -> Bool { self != other && (self &- other) < 0x8000 }
}
