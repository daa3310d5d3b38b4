// Memory of a connected PeerConnection: resident set size of this process before and after
// connecting pairs on loopback and idling, per PeerConnection. A warm-up pair is connected and
// torn down first, so one-time costs (OpenSSL and libsrtp initialisation, the Swift concurrency
// runtime's threads, malloc arenas) are in the baseline rather than charged to the pair.
import Foundation
import Glibc
import PeerConnection
import Transport

/// /proc/self/statm's second field (resident pages) in bytes.
func residentBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// RSS after handing malloc's cached free memory back to the kernel, so pages freed by an
/// earlier pair can neither be reused unseen by the measured one nor counted as its garbage.
func trimmedResidentBytes() -> Int {
    _ = mallocTrim?(0)
    return residentBytes() ?? 0
}

private typealias MallocTrim = @convention(c) (Int) -> Int32

/// glibc's malloc_trim(3), looked up at run time (Glibc's Swift module leaves out <malloc.h>):
/// returns the free memory of every arena to the kernel.
private let mallocTrim: MallocTrim? = {
    guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "malloc_trim") else { return nil }
    return unsafeBitCast(symbol, to: MallocTrim.self)
}()

struct MemoryResult {
    /// MB per PeerConnection, one pair on event loops that existed before the baseline.
    var perPC: Double
    /// The same with ten pairs connected at once (shows it scales linearly, smooths page granularity).
    var perPCTenPairs: Double
    /// One pair, each PeerConnection bringing a new event loop (thread stack, malloc arena).
    var perPCOwnLoop: Double
    var baselineMB: Double
}

private let megabyte = 1024.0 * 1024.0

/// Connects `pairs` pairs (with `makeLoops` called after the baseline), idles, samples, closes.
/// Returns MB per PeerConnection.
private func rssPerPC(pairs: Int, idle: Duration, loops makeLoops: () throws -> (EventLoop, EventLoop)) async throws -> (perPC: Double, baseline: Int) {
    let before = trimmedResidentBytes()
    let loops = try makeLoops()
    var connected: [ConnectedPair] = []
    do {
        for _ in 0..<pairs { connected.append(try await connectPair(offererLoop: loops.0, answererLoop: loops.1)) }
        try await Task.sleep(for: idle)
    } catch {
        for pair in connected { await pair.close() }
        throw error
    }
    let after = trimmedResidentBytes()
    let stayed = connected.allSatisfy { $0.offerer.connectionState == .connected && $0.answerer.connectionState == .connected }
    for pair in connected { await pair.close() }
    try await Task.sleep(for: .milliseconds(200))   // let close_notify and socket teardown finish
    guard stayed else { throw BenchError("a measured pair did not stay connected while idle") }
    return (Double(after - before) / Double(2 * pairs) / megabyte, before)
}

/// Warm-up pair (connected, idle, closed), then: one pair on the same two loops; ten pairs on
/// them; one pair on two loops created after the baseline.
func measureMemory(idle: Duration = .seconds(1)) async throws -> MemoryResult {
    let shared = (try EventLoop(name: "bench-mem-a"), try EventLoop(name: "bench-mem-b"))
    var ownLoops: [EventLoop] = []
    defer {
        shared.0.shutdown()
        shared.1.shutdown()
        for loop in ownLoops { loop.shutdown() }
    }
    let warmUp = try await connectPair(offererLoop: shared.0, answererLoop: shared.1)
    try await Task.sleep(for: idle)
    await warmUp.close()
    try await Task.sleep(for: .milliseconds(200))

    let one = try await rssPerPC(pairs: 1, idle: idle) { shared }
    let ten = try await rssPerPC(pairs: 10, idle: idle) { shared }
    let own = try await rssPerPC(pairs: 1, idle: idle) {
        let loops = (try EventLoop(name: "bench-mem-c"), try EventLoop(name: "bench-mem-d"))
        ownLoops = [loops.0, loops.1]
        return loops
    }
    return MemoryResult(perPC: one.perPC, perPCTenPairs: ten.perPC, perPCOwnLoop: own.perPC,
                        baselineMB: Double(one.baseline) / megabyte)
}
