// The floor a relay is compared with: one thread that receives a UDP stream and re-sends each
// datagram's bytes unchanged to N sockets with one sendmmsg — no SRTP, no RTP parsing, no
// per-player state. A source thread sends 1200-byte datagrams at the publisher's packet rate in
// per-frame bursts (30 a second); a drain thread empties the N sockets. The forwarder's thread CPU
// time (recv, sendmmsg and the loopback delivery the sender pays for) divided by the datagrams
// it forwarded is the floor's CPU per forwarded packet.
import Foundation
import Media
import Glibc
import Synchronization

struct FloorResult: Sendable {
    var destinations: Int
    var received: Int
    var forwarded: Int
    var cpuSeconds: Double
    var cpuPerPacketUs: Double { forwarded > 0 ? cpuSeconds * 1e6 / Double(forwarded) : 0 }
}

private func loopbackSocket(bindIt: Bool) -> (fd: Int32, address: sockaddr_in)? {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    guard bindIt else { return (fd, addr) }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { a in
        a.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard ok else {
        close(fd)
        return nil
    }
    return (fd, addr)
}

/// Runs the floor for `seconds` with `destinations` receivers; nil when sockets or sendmmsg are unavailable.
func forwardFloor(destinations: Int, packetsPerSecond: Double, packetSize: Int = 1200, seconds: Double) -> FloorResult? {
    guard let sendmmsg = sendmmsgFunction, MemoryLayout<MMsgHdr>.stride == 64, destinations > 0 else { return nil }
    guard let input = loopbackSocket(bindIt: true), let output = loopbackSocket(bindIt: false),
          let source = loopbackSocket(bindIt: false) else { return nil }
    var sinks: [(fd: Int32, address: sockaddr_in)] = []
    defer {
        for s in sinks { close(s.fd) }
        close(input.fd)
        close(output.fd)
        close(source.fd)
    }
    for _ in 0..<destinations {
        guard let s = loopbackSocket(bindIt: true) else { return nil }
        _ = fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK)
        sinks.append(s)
    }
    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
    setsockopt(input.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

    let stop = FloorFlag()
    let result = FloorBox()
    let done = DispatchGroup()
    let inputFD = input.fd, outputFD = output.fd, sourceFD = source.fd
    var inputAddress = input.address
    let sinkFDs = sinks.map(\.fd)
    let sinkAddresses = sinks.map(\.address)

    // Forwarder: recv one datagram, sendmmsg its bytes to every sink.
    done.enter()
    Thread {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 16)
        let names = UnsafeMutablePointer<sockaddr_in>.allocate(capacity: destinations)
        let messages = UnsafeMutablePointer<MMsgHdr>.allocate(capacity: destinations)
        var vector = iovec(iov_base: buffer, iov_len: 0)
        defer {
            buffer.deallocate()
            names.deallocate()
            messages.deallocate()
            done.leave()
        }
        withUnsafeMutablePointer(to: &vector) { iov in
            for i in 0..<destinations {
                names[i] = sinkAddresses[i]
                var m = MMsgHdr()
                m.msg_hdr.msg_name = UnsafeMutableRawPointer(names + i)
                m.msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_in>.size)
                m.msg_hdr.msg_iov = iov
                m.msg_hdr.msg_iovlen = 1
                messages[i] = m
            }
            var received = 0, forwarded = 0
            let cpuStart = threadCPUSeconds()
            while !stop.value.load(ordering: .relaxed) {
                let n = recv(inputFD, buffer, 2048, 0)
                if n <= 0 { continue }   // timeout or EINTR: check the stop flag
                received += 1
                iov.pointee.iov_len = n
                var sent = 0
                while sent < destinations {
                    let k = sendmmsg(outputFD, UnsafeMutableRawPointer(messages + sent), UInt32(min(destinations - sent, 1024)), 0)
                    if k < 0 {
                        if errno == EINTR || errno == EAGAIN || errno == ENOBUFS { continue }
                        break
                    }
                    sent += Int(k)
                }
                forwarded += sent
            }
            let cpu = threadCPUSeconds() - cpuStart
            result.value.withLock { $0 = FloorResult(destinations: destinations, received: received, forwarded: forwarded, cpuSeconds: cpu) }
        }
    }.start()

    // Drain: empty the sinks so they behave like read sockets.
    done.enter()
    Thread {
        defer { done.leave() }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        while !stop.value.load(ordering: .relaxed) {
            var any = false
            for fd in sinkFDs {
                while recv(fd, buffer, 2048, Int32(MSG_DONTWAIT)) > 0 { any = true }
            }
            if !any { usleep(1000) }
        }
    }.start()

    // Source: bursts of packetsPerSecond/30 datagrams every 1/30 s, on this thread.
    let payload = [UInt8](repeating: 0x5A, count: packetSize)
    let perFrame = packetsPerSecond / 30
    var owed = 0.0
    let start = MonotonicClock.seconds()
    var frame = 0
    let connected = withUnsafeMutablePointer(to: &inputAddress) { a in
        a.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(sourceFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    if connected {
        while MonotonicClock.seconds() - start < seconds {
            owed += perFrame
            while owed >= 1 {
                _ = payload.withUnsafeBytes { send(sourceFD, $0.baseAddress, $0.count, 0) }
                owed -= 1
            }
            frame += 1
            let next = start + Double(frame) / 30
            let wait = next - MonotonicClock.seconds()
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
        }
        usleep(50_000)   // the last burst is forwarded
    }
    stop.value.store(true, ordering: .relaxed)
    done.wait()
    return connected ? result.value.withLock { $0 } : nil
}

private final class FloorFlag: Sendable { let value = Atomic<Bool>(false) }
private final class FloorBox: Sendable { let value = Mutex<FloorResult?>(nil) }
