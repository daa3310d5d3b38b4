import Locks

/// An ordered list of processors applied one after another. The list can be edited from any
/// thread while frames flow: each frame runs through the list as it was when the frame arrived.
public final class ProcessorChain: VideoProcessor {
    private let list: Locked<[any VideoProcessor]>

    public init(_ processors: [any VideoProcessor] = []) {
        list = Locked(processors)
    }

    /// The processors in the order they run.
    public var processors: [any VideoProcessor] {
        get { list.withLock { $0 } }
        set { list.withLock { $0 = newValue } }
    }

    public var isEmpty: Bool { list.withLock { $0.isEmpty } }

    public func append(_ processor: any VideoProcessor) {
        list.withLock { $0.append(processor) }
    }

    /// Inserts at `index` (clamped to the list).
    public func insert(_ processor: any VideoProcessor, at index: Int) {
        list.withLock { $0.insert(processor, at: min(max(index, 0), $0.count)) }
    }

    /// Removes every occurrence of this processor (by identity).
    public func remove(_ processor: any VideoProcessor) {
        list.withLock { $0.removeAll { $0 === processor } }
    }

    public func removeAll() {
        list.withLock { $0.removeAll() }
    }

    /// Runs the frame through every processor; nil as soon as one drops it.
    public func process(_ frame: VideoFrame) -> VideoFrame? {
        let snapshot = list.withLock { $0 }
        var current = frame
        for processor in snapshot {
            guard let next = processor.process(current) else { return nil }
            current = next
        }
        return current
    }
}
