/// A value only `loop`'s work may touch (swift-nio's NIOLoopBoundBox): it can ride in a
/// `@Sendable` closure handed to `execute`, and every use checks the loop in debug builds.
public final class LoopBound<Value>: @unchecked Sendable {
    // @unchecked: `stored` is read and written only by `loop`'s work, which runs on one thread
    // at a time; `value` checks that in debug builds.
    public let loop: EventLoop
    private var stored: Value

    /// `value` comes in disconnected from the caller (`sending`), so handing it to the loop is safe.
    public init(_ value: sending Value, loop: EventLoop) {
        self.loop = loop
        stored = value
    }

    public var value: Value {
        get {
            loop.preconditionInLoop()
            return stored
        }
        set {
            loop.preconditionInLoop()
            stored = newValue
        }
    }
}
