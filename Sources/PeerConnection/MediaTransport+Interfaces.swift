import ICE
import STUN
import Transport

/// Continual gathering on the loop thread: the host's addresses, as they come and go, become
/// ICE bases (a host candidate, and srflx/relay ones where STUN/TURN servers are configured)
/// and stop being them (their candidates withdrawn, their sockets closed).
extension MediaTransport {
    func interfaceChanged(_ event: InterfaceEvent) {
        loop.preconditionInLoop()
        guard !closed else { return }
        switch event {
        case .added(let address): interfaceAdded(address)
        case .removed(let address): interfaceRemoved(address.ip)
        }
        pump()
    }

    private func interfaceAdded(_ address: InterfaceAddress) {
        // The first gathering's rule (`localInterfaceAddresses()`: IPv4, loopback included).
        guard address.isGatherable(includeIPv6: false), !io.localAddresses.contains(where: { $0.ip == address.ip }) else { return }
        // A path with fixed addresses (a shared port), or an address that cannot be bound: nothing to gather.
        guard let base = try? io.addLocalAddress(address.ip), gatheringStarted else { return }
        let now = loop.now
        if gatherHosts { ice.addLocalBase(base, now: now) }
        for server in turnServers where server.address.isIPv4 == base.isIPv4 && server.address.isLoopback == base.isLoopback {
            addRelay(server, base: base)?.client.start(now: now)
        }
    }

    private func interfaceRemoved(_ ip: SocketAddress.IP) {
        let now = loop.now
        var lostPath = false
        for base in io.localAddresses where base.ip == ip {
            // Allocations made through it cannot reach their servers any more (nor release).
            for relay in relays where relay.base == base {
                closeStream(relay)
                if let relayed = relay.relayed, ice.removeLocalBase(relayed, now: now) { lostPath = true }
            }
            relays.removeAll { $0.base == base }
            if ice.removeLocalBase(base, now: now) { lostPath = true }
            io.removeLocalAddress(base)
        }
        finishGatheringIfSettled(now: now)
        if lostPath { onSelectedPathLost?() }
    }
}
