import STUN

/// A shared socket at one address of a `VirtualNetwork`: a server with many connections on one
/// port (the relay, the echo endpoint) run in process. Routing is `MuxRouter`'s, as on `UDPMux`.
public final class VirtualMux: SharedSocket, VirtualAttachment, @unchecked Sendable {
    // @unchecked: used only by `loop`'s work, like UDPMux.
    public let network: VirtualNetwork
    public internal(set) var localAddress: SocketAddress = SocketAddress(ip: .v4(0), port: 0)
    public private(set) var router = MuxRouter<MuxEndpoint>()
    /// What the server sends goes through `uplink`; what it receives, through `downlink`.
    public let uplink: VirtualLink
    public let downlink: VirtualLink
    private var closed = false

    init(network: VirtualNetwork, uplink: VirtualLink, downlink: VirtualLink) {
        self.network = network
        self.uplink = uplink
        self.downlink = downlink
    }

    public var loop: EventLoop { network.loop }
    public var batchSocket: UDPSocket? { nil }

    public func send(_ bytes: UnsafeRawBufferPointer, to remote: SocketAddress) -> Bool {
        guard !closed else { return false }
        network.send(bytes, from: localAddress, of: self, to: remote)
        return true
    }

    public func close() {
        guard !closed else { return }
        closed = true
        network.unbind(self)
        router = MuxRouter()
    }

    func receive(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, at local: SocketAddress) {
        receive(bytes, from: from, now: loop.now)
    }
}
