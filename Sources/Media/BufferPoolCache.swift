import Locks

/// Pools keyed by format and size, shared by the pixel operations that were not handed a pool of
/// their own. Keeps the most recently used sizes only, so a stream that changes resolution does not
/// pin the memory of every size it ever had.
final class BufferPoolCache: Sendable {
    static let shared = BufferPoolCache()

    struct Key: Hashable {
        var format: PixelFormat
        var width: Int
        var height: Int
    }

    private struct Entry {
        var pool: VideoBufferPool
        var lastUse: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var tick: UInt64 = 0
    }

    /// Buffers kept per size: enough for a capture → process → encode pipeline with a few frames in flight.
    static let poolCapacity = 12
    /// Distinct sizes kept before the least recently used one is let go.
    static let maxPools = 32

    private let state = Locked(State())

    /// The pool for one format and size (made on first use).
    func pool(format: PixelFormat, width: Int, height: Int) -> VideoBufferPool {
        let key = Key(format: format, width: width, height: height)
        return state.withLock { s in
            s.tick &+= 1
            if var entry = s.entries[key] {
                entry.lastUse = s.tick
                s.entries[key] = entry
                return entry.pool
            }
            if s.entries.count >= Self.maxPools,
               let oldest = s.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                s.entries[oldest] = nil
            }
            let pool = VideoBufferPool(format: format, width: width, height: height, capacity: Self.poolCapacity)
            s.entries[key] = Entry(pool: pool, lastUse: s.tick)
            return pool
        }
    }

    /// Buffers allocated so far by the pool of one key (tests check steady state).
    func allocatedCount(format: PixelFormat, width: Int, height: Int) -> Int {
        let key = Key(format: format, width: width, height: height)
        return state.withLock { $0.entries[key]?.pool.allocatedCount ?? 0 }
    }
}

extension VideoBufferPool {
    func holds(_ format: PixelFormat, _ width: Int, _ height: Int) -> Bool {
        self.format == format && self.width == width && self.height == height
    }
}

/// A writable buffer for an operation's output: from the caller's pool when it fits the format
/// and size, otherwise from the shared cache (a pool of the wrong shape is not an error worth
/// failing a frame for).
@inline(__always)
func outputBuffer(_ format: PixelFormat, _ width: Int, _ height: Int, pool: VideoBufferPool?) -> VideoFrameBuffer {
    if let pool, pool.holds(format, width, height) { return pool.get() }
    return BufferPoolCache.shared.pool(format: format, width: width, height: height).get()
}

@inline(__always)
func clampSide(_ n: Int) -> Int { VideoFrameBuffer.clampedDimension(n) }

@inline(__always)
func i32(_ n: Int) -> Int32 { Int32(truncatingIfNeeded: n) }
