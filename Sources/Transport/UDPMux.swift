import Glibc
import STUN

/// A shared socket on a real UDP port (see `SharedSocket`).
public final class UDPMux: SharedSocket, @unchecked Sendable {
    // @unchecked: used only by `loop`'s work (connections are created there too), which the
    // members that matter check.
    public let loop: EventLoop
    public let socket: UDPSocket
    public private(set) var router = MuxRouter<MuxEndpoint>()
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)

    /// Loop work only.
    public init(loop: EventLoop, bind address: SocketAddress) throws(TransportError) {
        self.loop = loop
        socket = try UDPSocket(bind: address, receiveBuffer: 16 << 20, sendBuffer: 16 << 20)
        loop.register(fd: socket.fd) { [weak self] in
            guard let self else { return }
            let now = self.loop.now
            drain(self.socket, loop: self.loop, buffer: self.buffer) { bytes, from in self.receive(bytes, from: from, now: now) }
        }
    }

    public var localAddress: SocketAddress { socket.localAddress }
    public var batchSocket: UDPSocket? { socket }

    public func send(_ bytes: UnsafeRawBufferPointer, to remote: SocketAddress) -> Bool {
        loop.preconditionInLoop()
        return socket.send(bytes, to: remote)
    }

    public func close() {
        loop.unregister(fd: socket.fd)
        socket.close()
        router = MuxRouter()
    }

    deinit { buffer.deallocate() }
}
