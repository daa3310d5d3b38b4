import Locks

/// Signaling work a session has in flight — offers made, HTTP exchanged, answers applied: work
/// that waits on no clock. A simulation moves virtual time only while none is in flight, so a
/// whole session's recovery replays exactly; elsewhere it is only counted.
public final class SignalingActivity: Sendable {
    private let count = Locked(0)

    public init() {}

    public var isIdle: Bool { count.withLock { $0 == 0 } }

    /// Work begins: before handing it to a task, so no instant passes in which it is not counted.
    func begin() { count.withLock { $0 += 1 } }

    func end() { count.withLock { $0 -= 1 } }

    /// `body` as one piece of counted work.
    func run<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        begin()
        defer { end() }
        return try await body()
    }
}
