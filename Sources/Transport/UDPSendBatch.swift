import CShim
import Glibc
import STUN

/// Datagrams written in place into reused slots and sent together: one `sendmmsg` per run of
/// slots on the same socket (a relay's fan-out of one packet to all its players). Nothing is
/// allocated per datagram once the batch has grown to the fan-out's size. One loop's work only
/// (checked in debug builds when the batch is given its loop).
///
/// UDP GSO (UDP_SEGMENT) is not used here: it splits one buffer into equal segments for one
/// destination, while a fan-out sends one datagram to each of many destinations.
public final class UDPSendBatch {
    /// Bytes per slot: a full-size RTP packet with its SRTP tag and rewritten header fits.
    public static let slotSize = 2048
    private var capacity = 0
    private var storage: UnsafeMutableRawPointer?
    private var buffers: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    private var lengths: UnsafeMutablePointer<Int>?
    private var names: UnsafeMutablePointer<sockaddr_storage>?
    private var nameLengths: UnsafeMutablePointer<UInt32>?
    private var sockets: [UDPSocket?] = []
    public private(set) var count = 0
    public private(set) var datagramsSent = 0
    public private(set) var sendErrors = 0
    public private(set) var syscalls = 0

    /// Queued datagrams are sent once this many are waiting (when the next slot is asked
    /// for): a fan-out to hundreds of players then reuses the same few slots, which stay in
    /// cache between being written and being copied by the kernel, instead of streaming
    /// through `slotSize` × players bytes. The C side sends 64 per sendmmsg either way.
    public var flushThreshold: Int

    /// The loop whose work alone uses the batch, when known.
    public let loop: EventLoop?

    public init(capacity: Int = 16, flushThreshold: Int = 64, loop: EventLoop? = nil) {
        self.loop = loop
        self.flushThreshold = max(1, flushThreshold)
        grow(to: max(1, capacity))
    }

    deinit { release() }

    /// The next free slot to write a datagram into; `commit` queues it. Valid until the next
    /// `slot()`, `commit` or `flush`. Sends what is queued first when `flushThreshold` are.
    public func slot() -> UnsafeMutableRawBufferPointer {
        loop?.preconditionInLoop()
        if count >= flushThreshold { flush() }
        if count == capacity { grow(to: capacity * 2) }
        return UnsafeMutableRawBufferPointer(start: storage! + count * Self.slotSize, count: Self.slotSize)
    }

    /// Queues the slot `slot()` returned, holding `length` bytes, for `remote` on `socket`.
    public func commit(length: Int, socket: UDPSocket, to remote: SocketAddress) {
        guard count < capacity, length <= Self.slotSize, let names, let nameLengths, let lengths else { return }
        let stored = remote.withSockAddr { address, size -> UInt32 in
            UnsafeMutableRawPointer(names + count).copyMemory(from: address, byteCount: Int(size))
            return UInt32(size)
        }
        nameLengths[count] = stored
        lengths[count] = length
        keep(socket)
        count += 1
    }

    /// The same with the destination as a ready-made sockaddr (`nameLength` bytes at `name`,
    /// at most a sockaddr_storage): a forwarder's per-player record keeps it, so nothing is
    /// built per datagram.
    public func commit(length: Int, socket: UDPSocket, name: UnsafeRawPointer, nameLength: UInt32) {
        guard count < capacity, length <= Self.slotSize, Int(nameLength) <= MemoryLayout<sockaddr_storage>.size,
              let names, let nameLengths, let lengths else { return }
        UnsafeMutableRawPointer(names + count).copyMemory(from: name, byteCount: Int(nameLength))
        nameLengths[count] = nameLength
        lengths[count] = length
        keep(socket)
        count += 1
    }

    /// The slot's socket; not stored again when it is already there (a fan-out on one shared
    /// socket then costs no retain/release per datagram).
    @inline(__always)
    private func keep(_ socket: UDPSocket) {
        if count < sockets.count {
            if sockets[count] !== socket { sockets[count] = socket }
        } else {
            sockets.append(socket)
        }
    }

    /// The bytes and destination length of queued datagram `i` (tests).
    func queued(_ i: Int) -> (bytes: [UInt8], nameLength: UInt32)? {
        guard i < count, let storage, let lengths, let nameLengths else { return nil }
        return (Array(UnsafeRawBufferPointer(start: storage + i * Self.slotSize, count: lengths[i])), nameLengths[i])
    }

    /// Sends what is queued (one sendmmsg per run of slots on one socket) and empties the batch.
    @discardableResult
    public func flush() -> Int {
        loop?.preconditionInLoop()
        guard count > 0, let buffers, let lengths, let names, let nameLengths else { return 0 }
        var sent = 0
        var start = 0
        var closedSeen = false
        while start < count {
            let socket = sockets[start]
            var end = start + 1
            while end < count, sockets[end] === socket { end += 1 }
            if let socket, !socket.isClosed {
                var failed: UInt32 = 0
                let n = swiftrtc_send_datagrams(socket.fd, buffers + start, lengths + start, names + start,
                                                MemoryLayout<sockaddr_storage>.stride, nameLengths + start,
                                                UInt32(end - start), &failed)
                syscalls += 1
                sent += Int(n)
                sendErrors += Int(failed)
            } else {
                sendErrors += end - start
                closedSeen = true
            }
            start = end
        }
        // Slots keep their socket for the next fan-out (same socket: no retain, no release);
        // a closed one is dropped so the batch does not keep it alive.
        if closedSeen {
            for i in 0..<count where sockets[i]?.isClosed ?? false { sockets[i] = nil }
        }
        count = 0
        datagramsSent += sent
        return sent
    }

    private func grow(to newCapacity: Int) {
        let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity * Self.slotSize, alignment: 16)
        let newBuffers = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: newCapacity)
        let newLengths = UnsafeMutablePointer<Int>.allocate(capacity: newCapacity)
        let newNames = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: newCapacity)
        let newNameLengths = UnsafeMutablePointer<UInt32>.allocate(capacity: newCapacity)
        for i in 0..<newCapacity { newBuffers[i] = newStorage + i * Self.slotSize }
        if let storage, let lengths, let names, let nameLengths {
            newStorage.copyMemory(from: storage, byteCount: count * Self.slotSize)
            newLengths.initialize(from: lengths, count: count)
            newNames.initialize(from: names, count: count)
            newNameLengths.initialize(from: nameLengths, count: count)
        }
        release()
        storage = newStorage
        buffers = newBuffers
        lengths = newLengths
        names = newNames
        nameLengths = newNameLengths
        capacity = newCapacity
    }

    private func release() {
        storage?.deallocate()
        buffers?.deallocate()
        lengths?.deallocate()
        names?.deallocate()
        nameLengths?.deallocate()
    }
}
