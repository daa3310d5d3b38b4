/// A point on the continuous clock, kept as the `Duration` since one process-wide origin.
///
/// `ContinuousClock.Instant` is not `@frozen` (its layout belongs to the Concurrency library),
/// so every struct that stores one has a layout known only at run time: it is copied, moved and
/// compared through value witnesses, and reading a property of it copies the whole struct (an
/// array of SendHistory-shaped entries: 158 ns per entry with Instant, 29 ns with an integer).
/// The estimators, the pacer and their histories store and take Moments; their callers (the
/// congestion controller, the relay's forwarding stamp) convert an Instant once per call with
/// `Moment(_:)`, and `.instant` converts back. Both are exact (an Instant is a Duration).
@frozen public struct Moment: Comparable, Hashable, Sendable {
    public var sinceOrigin: Duration

    /// Read once: the first conversion in the process fixes it.
    private static let origin = ContinuousClock.now

    @usableFromInline init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    public init(_ instant: ContinuousClock.Instant) { sinceOrigin = instant - Moment.origin }

    public var instant: ContinuousClock.Instant { Moment.origin + sinceOrigin }

    @inlinable public static func < (a: Moment, b: Moment) -> Bool { a.sinceOrigin < b.sinceOrigin }

    @inlinable public static func - (a: Moment, b: Moment) -> Duration { a.sinceOrigin - b.sinceOrigin }

    @inlinable public static func + (a: Moment, d: Duration) -> Moment { Moment(sinceOrigin: a.sinceOrigin + d) }

    @inlinable public static func - (a: Moment, d: Duration) -> Moment { Moment(sinceOrigin: a.sinceOrigin - d) }

    @inlinable public static func += (a: inout Moment, d: Duration) { a.sinceOrigin += d }

    @inlinable public func advanced(by d: Duration) -> Moment { self + d }
}
