import ICE
import STUN
import TLS
import Transport
import TURN

/// One TURN allocation of a connection: the client core, the host socket it talks from, and
/// once allocated the relayed address ICE uses as a base.
final class RelayAllocation {
    let client: TURNClient
    let base: SocketAddress
    var server: SocketAddress { client.configuration.server }
    var relayed: SocketAddress?
    var settled = false
    /// TURN over TCP or TLS: the connection and the framing of what it carries.
    var stream: TCPStream?
    var framer = TURNStreamFramer()
    /// TURN over TLS (turns:): the TLS client between the stream and the framer.
    var tls: TLSClient?
    /// The ICE server URL, as stats report it.
    let url: ICEServerURL

    init(client: TURNClient, base: SocketAddress, url: ICEServerURL) {
        self.client = client
        self.base = base
        self.url = url
    }

    /// W3C `relayProtocol`: how we reach the server.
    var relayProtocol: String { client.configuration.transport.rawValue }

    func pollTimeout() -> ContinuousClock.Instant? {
        [client.pollTimeout(), tls?.pollTimeout()].compactMap { $0 }.min()
    }

    func handleTimeout(now: ContinuousClock.Instant) {
        do throws(TLSError) { try tls?.handleTimeout(now: now) } catch { client.connectionFailed(error.message) }
        client.handleTimeout(now: now)
    }
}

/// TURN on the loop thread: what ICE, DTLS and SRTP send from a relayed address goes through
/// its allocation (ChannelData once bound); what the server relays comes back through
/// `demultiplex` as if it had arrived on the relayed address.
extension MediaTransport {
    /// Before `gather`: one allocation per server, from a host socket of the server's family
    /// (loopback servers from a loopback socket).
    func addRelays(_ servers: [TURNServerEntry]) {
        turnServers = servers
        for server in servers {
            let sameFamily = io.localAddresses.filter { $0.isIPv4 == server.address.isIPv4 }
            guard let base = sameFamily.first(where: { $0.isLoopback == server.address.isLoopback }) ?? sameFamily.first else {
                setupFailed("TURN server \(server.address): no local socket of its address family")
                continue
            }
            addRelay(server, base: base)
        }
    }

    /// One allocation on `server` from the host socket at `base`; started by `gather` (or at
    /// once, for a base that appeared later).
    @discardableResult
    func addRelay(_ server: TURNServerEntry, base: SocketAddress) -> RelayAllocation? {
        var config = TURNConfiguration(server: server.address, username: server.username, password: server.password)
        config.transport = server.url.scheme == .turns ? .tls : server.url.transport == .tcp ? .tcp : .udp
        let relay = RelayAllocation(client: TURNClient(configuration: config), base: base, url: server.url)
        if config.transport.isStream {
            do throws(TURNSetupError) {
                if config.transport == .tls {
                    // The handshake runs on the loop like the rest; the Allocate waits in it.
                    // Made first: a CA file that does not load needs no connection to tell.
                    do {
                        relay.tls = try TLSClient(host: server.url.host, display: server.url.host,
                                                  trust: TLSTrust(caFile: server.tlsCAFile), now: loop.now)
                    } catch { throw TURNSetupError(error.message) }
                }
                // Connecting blocks the loop for about a round trip (see TCPStream); a gather-time cost.
                do { relay.stream = try TCPStream(connectTo: server.address) } catch { throw TURNSetupError(error.description) }
            } catch {
                setupFailed("TURN server \(server.url): \(error.reason)")
                return nil
            }
            watch(relay)
        }
        relays.append(relay)
        return relay
    }

    /// A server that gets no allocation at all: reported now, and kept for the relay-only failure.
    private func setupFailed(_ reason: String) {
        relaySetupErrors.append(reason)
        onTURNError?(reason, false)
    }

    /// Reads the TCP stream on the loop: whole frames go to the client core.
    private func watch(_ relay: RelayAllocation) {
        guard let stream = relay.stream else { return }
        loop.register(fd: stream.fd) { [weak self, weak relay] in
            guard let self, let relay, let stream = relay.stream else { return }
            var buffer = [UInt8](repeating: 0, count: 16_384)
            var closed = false
            for _ in 0..<64 {   // bounded, like the UDP drain
                let result = buffer.withUnsafeMutableBytes { stream.receive(into: $0) }
                guard case .data(let n) = result else {
                    if case .closed = result { closed = true }
                    break
                }
                let received = Array(buffer[0..<n])
                let bytes: [UInt8]
                if let tls = relay.tls {
                    do throws(TLSError) { bytes = try tls.receive(received) } catch {
                        relay.client.connectionFailed(error.message)
                        closed = true
                        break
                    }
                } else {
                    bytes = received
                }
                do {
                    for frame in try relay.framer.append(bytes) {
                        relay.client.handleDatagram(frame, now: loop.now)
                    }
                } catch {
                    closed = true   // not TURN framing: nothing after it can be trusted
                    break
                }
                if relay.tls?.state == .closed { closed = true; break }
            }
            if closed {
                if let tls = relay.tls {
                    do throws(TLSError) { try tls.streamEnded() } catch { relay.client.connectionFailed(error.message) }
                }
                relay.client.connectionClosed()
                self.closeStream(relay)   // with TLS's alert, if the handshake failed
            }
            if self.lingerTimer != nil {
                self.flush(relay)
                self.closeIfReleased()
            } else {
                self.pump()
            }
        }
    }

    /// Sends from a host socket, or through the allocation whose relayed address is `local`.
    @discardableResult
    func sendDatagram(_ bytes: [UInt8], from local: SocketAddress, to remote: SocketAddress) -> Bool {
        if !relays.isEmpty, let relay = relays.first(where: { $0.relayed == local }) {
            let ok = relay.client.send(bytes, to: remote, now: loop.now)
            flush(relay)
            return ok
        }
        return io.send(bytes, from: local, to: remote)
    }

    func flush(_ relay: RelayAllocation) {
        while let datagram = relay.client.pollTransmit() {
            guard relay.client.configuration.transport.isStream else {
                io.send(datagram, from: relay.base, to: relay.server)
                continue
            }
            if let tls = relay.tls {
                do throws(TLSError) { try tls.send(datagram) } catch {
                    relay.client.connectionFailed(error.message)
                }
            } else {
                relay.stream?.send(datagram)
            }
        }
        // Handshake messages and records, what the client sent or the TLS engine answered.
        if let tls = relay.tls, let stream = relay.stream {
            let output = tls.takeOutput()
            if !output.isEmpty { stream.send(output) }
        }
    }

    /// Drains every allocation's datagrams and events; true if anything happened.
    func pumpRelays() -> Bool {
        var progressed = false
        let now = loop.now
        for relay in relays {
            flush(relay)
            while let event = relay.client.pollEvent() {
                progressed = true
                handle(event, relay: relay, now: now)
            }
        }
        return progressed
    }

    private func handle(_ event: TURNEvent, relay: RelayAllocation, now: ContinuousClock.Instant) {
        switch event {
        case .allocated(let relayed, let mapped, _):
            relay.relayed = relayed
            relay.settled = true
            ice.addRelayCandidate(relayed: relayed, mapped: mapped, server: relay.server, now: now)
            finishGatheringIfSettled(now: now)
        case .data(let peer, let bytes):
            guard let relayed = relay.relayed else { return }
            _ = bytes.withUnsafeBytes { demultiplex($0, from: peer, local: relayed) }
        case .failed(let error):
            relay.settled = true
            closeStream(relay)
            let usable = relays.contains { $0.relayed != nil && $0.client.state == .allocated } || !relays.allSatisfy(\.settled)
            onTURNError?(error.description, !gatherHosts && !usable)
            finishGatheringIfSettled(now: now)
        case .peerFailed, .released:
            break   // the allocation goes on; ICE's checks on that pair fail on their own
        }
    }

    func finishGatheringIfSettled(now: ContinuousClock.Instant) {
        guard gatheringStarted, !iceGatheringFinished, relays.allSatisfy(\.settled) else { return }
        iceGatheringFinished = true
        ice.finishGathering(now: now)
    }

    /// Refresh with lifetime 0 on every allocation (RFC 8656 §7).
    func releaseRelays() {
        let now = loop.now
        for relay in relays {
            relay.client.close(now: now)
            flush(relay)
        }
    }

    /// Keeps the sockets open up to a second after `close` so the servers' answers to the
    /// releases arrive (a stale nonce needs a retry, or the allocation outlives us by its lifetime).
    func lingerForRelease() {
        guard relays.contains(where: { $0.client.state == .releasing }) else {
            closeSockets()
            return
        }
        lingerTimer = loop.schedule(at: loop.now + .seconds(1)) { [self] in
            lingerTimer = nil
            closeSockets()
        }
    }

    /// After `close`: only the TURN servers' answers still matter.
    func lingeringReceive(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, local: SocketAddress) {
        guard lingerTimer != nil, let relay = relays.first(where: { $0.server == from && $0.base == local }) else { return }
        relay.client.handleDatagram(Array(bytes), now: loop.now)
        flush(relay)
        closeIfReleased()
    }

    func closeIfReleased() {
        guard let timer = lingerTimer, !relays.contains(where: { $0.client.state == .releasing }) else { return }
        loop.cancelTimer(timer)
        lingerTimer = nil
        closeSockets()
    }

    func closeRelayStreams() {
        for relay in relays { closeStream(relay) }
    }

    /// Ends a relay's TCP or TLS connection (close_notify first); its allocation goes with it.
    func closeStream(_ relay: RelayAllocation) {
        guard let stream = relay.stream else { return }
        relay.stream = nil
        if let tls = relay.tls {
            tls.close()
            stream.send(tls.takeOutput())
        }
        loop.unregister(fd: stream.fd)
        stream.close()
    }
}

/// Why a TCP or TLS connection to a TURN server could not be set up.
private struct TURNSetupError: Error {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}
