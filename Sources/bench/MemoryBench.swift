// Memory of a connected PeerConnection: resident set size of this process before and after
// connecting one pair on loopback and idling, halved. A warm-up pair is connected and torn
// down first, so one-time costs (OpenSSL and libsrtp initialisation, the Swift concurrency
// runtime's threads, malloc arenas) are in the baseline rather than charged to the pair.
import Foundation
import Glibc
import SwiftRTC
import Transport

struct MemorySample {
    /// Resident set size (statm: resident pages × page size).
    var rss: Int

    /// Frees what malloc keeps cached (so pages freed by the warm-up pair cannot be silently
    /// reused by the measured one, and garbage is not counted), then samples.
    static func now() -> MemorySample {
        _ = mallocTrim?(0)
        return MemorySample(rss: residentBytes() ?? 0)
    }
}

private typealias MallocTrim = @convention(c) (Int) -> Int32

/// glibc's malloc_trim(3), looked up at run time (Glibc's Swift module leaves out <malloc.h>):
/// returns free memory of every arena to the kernel.
private let mallocTrim: MallocTrim? = {
    guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "malloc_trim") else { return nil }
    return unsafeBitCast(symbol, to: MallocTrim.self)
}()

/// /proc/self/statm's second field (resident pages) in bytes.
func residentBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

struct MemoryResult {
    /// Per PeerConnection, on event loops that existed before the baseline.
    var rssPerPC: Double
    /// Per PeerConnection when each brings its own event loop (thread stack and its malloc arena).
    var rssPerPCWithLoop: Double
    var baselineRSS: Double
}

private let megabyte = 1024.0 * 1024.0

/// Measures, in this order: warm-up pair (connected, idled, closed); baseline; measured pair on
/// the same two loops, connected and idle for `idle`; sample. Then the same again with two new
/// loops created after the baseline, to show what a thread per connection adds.
func measureMemory(idle: Duration = .seconds(1)) async throws -> MemoryResult {
    let loops = (try EventLoop(name: "bench-mem-a"), try EventLoop(name: "bench-mem-b"))
    defer {
        loops.0.shutdown()
        loops.1.shutdown()
    }
    let warmUp = try await connectPair(offererLoop: loops.0, answererLoop: loops.1)
    try await Task.sleep(for: idle)
    await warmUp.close()
    try await Task.sleep(for: .milliseconds(200))   // let close_notify and socket teardown finish

    let before = MemorySample.now()
    let pair = try await connectPair(offererLoop: loops.0, answererLoop: loops.1)
    try await Task.sleep(for: idle)
    let after = MemorySample.now()
    guard pair.offerer.peerConnectionState == .connected, pair.answerer.peerConnectionState == .connected else {
        throw BenchError("the measured pair did not stay connected while idle")
    }
    await pair.close()
    try await Task.sleep(for: .milliseconds(200))

    // Own loops: created after the baseline, so their threads are counted.
    let beforeOwn = MemorySample.now()
    let ownLoops = (try EventLoop(name: "bench-mem-c"), try EventLoop(name: "bench-mem-d"))
    defer {
        ownLoops.0.shutdown()
        ownLoops.1.shutdown()
    }
    let ownPair = try await connectPair(offererLoop: ownLoops.0, answererLoop: ownLoops.1)
    try await Task.sleep(for: idle)
    let afterOwn = MemorySample.now()
    await ownPair.close()

    return MemoryResult(rssPerPC: Double(after.rss - before.rss) / 2 / megabyte,
                        rssPerPCWithLoop: Double(afterOwn.rss - beforeOwn.rss) / 2 / megabyte,
                        baselineRSS: Double(before.rss) / megabyte)
}
