import Dispatch

/// Where a connection's codecs run (W3C has no say; libwebrtc uses its encoder and decoder
/// task queues).
public enum CodecExecution: Sendable {
    /// Each stream's own serial queue: encoding and decoding never hold the connection's loop.
    case queues
    /// Inline on the caller — the thread handing a frame in, or the loop for packets: with a
    /// simulated loop a whole call, codecs included, runs on the test's thread in virtual time,
    /// deterministically.
    case inline
}

/// One stream's codec queue, as `CodecExecution` says.
struct CodecQueue: Sendable {
    private let queue: DispatchQueue?

    init(label: String, qos: DispatchQoS, execution: CodecExecution) {
        queue = execution == .queues ? DispatchQueue(label: label, qos: qos) : nil
    }

    func async(_ work: @escaping @Sendable () -> Void) {
        if let queue { queue.async(execute: work) } else { work() }
    }
}
