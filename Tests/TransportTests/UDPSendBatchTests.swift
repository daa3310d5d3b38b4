import Glibc
import STUN
import Testing
@testable import Transport

/// `UDPSendBatch`: datagrams written into slots and sent with sendmmsg, flushed every
/// `flushThreshold` so a large fan-out reuses the same slots; a ready-made sockaddr is the
/// same destination as a `SocketAddress`.
@Suite struct UDPSendBatchTests {
    func receiver() throws -> (UDPSocket, SocketAddress) {
        let socket = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)!)
        return (socket, socket.localAddress)
    }

    /// The next `n` datagrams, each waited for until the socket is readable (5 s at most).
    func drain(_ socket: UDPSocket, expecting n: Int) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 2048)
        while out.count < n {
            var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 5000) == 1 else { break }
            let r = buffer.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, 2048, Int32(MSG_DONTWAIT)) }
            if r > 0 { out.append(Array(buffer[0..<r])) }
        }
        return out
    }

    @Test func flushesEveryThresholdAndKeepsOrder() throws {
        let (sink, address) = try receiver()
        let sender = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)!)
        defer { sink.close(); sender.close() }
        let batch = UDPSendBatch(capacity: 4, flushThreshold: 8)
        for i in 0..<20 {
            let slot = batch.slot()
            slot[0] = UInt8(i)
            slot[1] = 0xAB
            if i % 2 == 0 {
                batch.commit(length: 2, socket: sender, to: address)
            } else {
                address.withSockAddr { name, size in batch.commit(length: 2, socket: sender, name: UnsafeRawPointer(name), nameLength: UInt32(size)) }
            }
            #expect(batch.count <= 8)
        }
        #expect(batch.count == 4)   // 8 + 8 went at the 9th and 17th slot
        batch.flush()
        #expect(batch.count == 0 && batch.datagramsSent == 20 && batch.sendErrors == 0 && batch.syscalls == 3)
        let got = drain(sink, expecting: 20)
        #expect(got == (0..<20).map { [UInt8($0), 0xAB] })
    }

    @Test func readyMadeNameIsTheSameDestination() throws {
        let (_, address) = try receiver()
        let sender = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)!)
        defer { sender.close() }
        let batch = UDPSendBatch()
        _ = batch.slot()
        batch.commit(length: 1, socket: sender, to: address)
        _ = batch.slot()
        address.withSockAddr { name, size in batch.commit(length: 1, socket: sender, name: UnsafeRawPointer(name), nameLength: UInt32(size)) }
        #expect(batch.queued(0)?.nameLength == batch.queued(1)?.nameLength)
        #expect(batch.queued(0)?.nameLength == UInt32(MemoryLayout<sockaddr_in>.size))
    }

    @Test func closedSocketCountsErrorsAndIsDropped() throws {
        let (sink, address) = try receiver()
        let sender = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)!)
        defer { sink.close() }
        let batch = UDPSendBatch()
        _ = batch.slot()
        batch.commit(length: 1, socket: sender, to: address)
        sender.close()
        #expect(batch.flush() == 0)
        #expect(batch.sendErrors == 1)
    }
}
