/// Values to any number of `AsyncStream`s: each `stream()` is new, gets the last value at once
/// when `replaysLast` (a state), then every value until `finish()`, keeping what its reader has
/// not taken yet as `buffering` says.
public final class Broadcast<Element: Sendable>: Sendable {
    private struct Listeners {
        var last: Element?
        var finished = false
        var next = 0
        var streams: [Int: AsyncStream<Element>.Continuation] = [:]
    }
    private let listeners: Locked<Listeners>
    private let replaysLast: Bool
    private let buffering: AsyncStream<Element>.Continuation.BufferingPolicy

    public init(initial: Element? = nil, replaysLast: Bool,
                buffering: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded) {
        listeners = Locked(Listeners(last: initial))
        self.replaysLast = replaysLast
        self.buffering = buffering
    }

    public var last: Element? { listeners.withLock { $0.last } }

    public func stream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: buffering)
        let id = listeners.withLock { l -> Int in
            if replaysLast, let last = l.last { continuation.yield(last) }
            if l.finished { continuation.finish() } else { l.streams[l.next] = continuation }
            l.next += 1
            return l.next - 1
        }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.streams.removeValue(forKey: id) } }
        return stream
    }

    public func yield(_ value: Element) {
        listeners.withLock { l in
            guard !l.finished else { return }
            l.last = value
            for c in l.streams.values { c.yield(value) }
        }
    }

    public func finish() {
        let streams = listeners.withLock { l in
            l.finished = true
            defer { l.streams.removeAll() }
            return Array(l.streams.values)
        }
        for c in streams { c.finish() }   // outside the lock: onTermination takes it
    }
}
