import CShim
import Glibc
import STUN

/// Datagrams written in place into reused slots and sent together: one `sendmmsg` per run of
/// slots on the same socket (a relay's fan-out of one packet to all its players). Nothing is
/// allocated per datagram once the batch has grown to the fan-out's size. One thread only.
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

    public init(capacity: Int = 16) { grow(to: max(1, capacity)) }

    deinit { release() }

    /// The next free slot to write a datagram into; `commit` queues it. Valid until the next
    /// `slot()`, `commit` or `flush`.
    public func slot() -> UnsafeMutableRawBufferPointer {
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
        if count < sockets.count { sockets[count] = socket } else { sockets.append(socket) }
        count += 1
    }

    /// Sends what is queued (one sendmmsg per run of slots on one socket) and empties the batch.
    @discardableResult
    public func flush() -> Int {
        guard count > 0, let buffers, let lengths, let names, let nameLengths else { return 0 }
        var sent = 0
        var start = 0
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
            }
            start = end
        }
        // Drop the socket references so a closed socket is not kept alive by an idle batch.
        for i in 0..<count { sockets[i] = nil }
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
