// CPU-time probes: this process (getrusage), one event-loop thread (run on that thread), and
// another process (/proc/PID/stat). CPU time, not wall time, is what the speed rows compare:
// on a shared 2-core machine it is the part of a measurement the neighbours do not inflate.
import Foundation
import Glibc
import Transport

/// User + system CPU seconds of every thread of this process.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

private func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }

/// CPU seconds of the calling thread.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// CPU seconds of `loop`'s thread, read on that thread.
func loopCPUSeconds(_ loop: EventLoop) async -> Double {
    (try? await loop.submit { threadCPUSeconds() }) ?? 0
}

/// utime + stime of process `pid` from /proc/PID/stat (all its threads), in seconds; nil when
/// the process is gone. Resolution: one clock tick (10 ms).
func processCPUSeconds(pid: Int32) -> Double? {
    processCPUTimes(pid: pid).map { $0.user + $0.system }
}

/// utime and stime of process `pid` apart: user time is what the process's own code costs, system
/// time what the kernel does for it (for the relay, mostly sendmmsg and loopback delivery).
func processCPUTimes(pid: Int32) -> (user: Double, system: Double)? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return nil }
    // Fields after "(comm)": state is field 3, utime 14, stime 15.
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
    let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
    return (utime / tick, stime / tick)
}

/// CLOCK_REALTIME in ms modulo 2^32: the clock the test pattern writes into its pixels.
func realtimeMs32() -> UInt32 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt32(truncatingIfNeeded: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
}

/// The value at fraction `q` (0…1) of the sorted values (nearest rank).
func percentile(_ values: [Double], _ q: Double) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

/// A free port on 127.0.0.1 for `type` (SOCK_STREAM or SOCK_DGRAM), released before returning.
func freeLoopbackPort(_ type: Int32) -> UInt16? {
    let fd = socket(AF_INET, type, 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { a in
        a.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    return ok ? UInt16(bigEndian: addr.sin_port) : nil
}

/// UDP RcvbufErrors from /proc/net/snmp: datagrams the kernel dropped because a socket's receive
/// buffer was full (system-wide: other processes count too).
func udpReceiveBufferErrors() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/net/snmp", encoding: .utf8) else { return nil }
    let lines = text.split(separator: "\n").filter { $0.hasPrefix("Udp:") }
    guard lines.count >= 2 else { return nil }
    let names = lines[0].split(separator: " "), values = lines[1].split(separator: " ")
    guard let i = names.firstIndex(of: "RcvbufErrors"), i < values.count else { return nil }
    return Int(values[i])
}
