import SeededRandom
import STUN
import Testing
@testable import TURN

@Suite struct TURNClientTests {
    let t0 = ContinuousClock.now
    let peer = SocketAddress(ip: .v4(0x7f00_0001), port: 61000)

    func client(password: String = "p") -> TURNClient {
        TURNClient(configuration: TURNConfiguration(server: FakeTURNServer.address, username: "u", password: password))
    }

    /// Runs Allocate through the 401 challenge to success; returns the client, allocated at t0.
    func allocatedClient(_ server: FakeTURNServer = FakeTURNServer(), lifetime: UInt32 = 600) throws -> TURNClient {
        let c = client()
        c.start(now: t0)
        let first = try server.parse(c.pollTransmit())
        c.handleDatagram(server.challenge(first), now: t0)
        let second = try server.parse(c.pollTransmit())
        c.handleDatagram(server.allocated(second, lifetime: lifetime), now: t0)
        _ = c.drainEvents()
        try #require(c.state == .allocated)
        return c
    }

    @Test func allocateAnswersTheChallengeWithLongTermCredentials() throws {
        let server = FakeTURNServer()
        let c = client()
        c.start(now: t0)
        let firstBytes = try server.requireBytes(c.pollTransmit())
        let first = try STUNMessage(parsing: firstBytes)
        #expect(first.method == .allocate && first.messageClass == .request)
        #expect(first.attributes.contains(.requestedTransport(17)))
        #expect(first.lifetime == 600)
        #expect(first.username == nil && first.messageIntegrity == nil)

        c.handleDatagram(server.challenge(first), now: t0)
        let secondBytes = try server.requireBytes(c.pollTransmit())
        let second = try STUNMessage(parsing: secondBytes)
        #expect(second.method == .allocate)
        #expect(second.transactionID != first.transactionID)
        #expect(second.username == "u" && second.realm == "test" && second.nonce == "nonce-1")
        #expect(server.verifies(secondBytes))

        c.handleDatagram(server.allocated(second), now: t0)
        #expect(c.drainEvents() == [.allocated(relayed: FakeTURNServer.relayed, mapped: FakeTURNServer.mapped, lifetime: 600)])
        #expect(c.relayedAddress == FakeTURNServer.relayed)
        #expect(c.mappedAddress == FakeTURNServer.mapped)
    }

    @Test func wrongPasswordFailsWithTheServersReason() throws {
        let server = FakeTURNServer()
        let c = client(password: "wrong")
        c.start(now: t0)
        c.handleDatagram(server.challenge(try server.parse(c.pollTransmit())), now: t0)
        let retryBytes = try server.requireBytes(c.pollTransmit())
        #expect(!server.verifies(retryBytes))   // the server cannot check it, so it challenges again
        c.handleDatagram(server.challenge(try STUNMessage(parsing: retryBytes)), now: t0)
        let events = c.drainEvents()
        #expect(events == [.failed(TURNError(.unauthorized, code: 401,
            "TURN server 127.0.0.1:3478 rejected the credentials for user u (401 Unauthorized)"))])
        #expect(c.state == .failed)
        #expect(c.pollTimeout() == nil)
        #expect(c.pollTransmit() == nil)
    }

    @Test func otherErrorsAreTypedWithCodeAndReason() throws {
        let server = FakeTURNServer()
        let c = client()
        c.start(now: t0)
        c.handleDatagram(server.challenge(try server.parse(c.pollTransmit())), now: t0)
        c.handleDatagram(server.error(try server.parse(c.pollTransmit()), code: 486, reason: "Allocation Quota Reached"), now: t0)
        let events = c.drainEvents()
        #expect(events == [.failed(TURNError(.rejected, code: 486, "TURN server 127.0.0.1:3478 refused Allocate (486 Allocation Quota Reached)"))])
    }

    @Test func staleNonceIsRetriedWithTheNewNonce() throws {
        var server = FakeTURNServer()
        let c = try allocatedClient(server)
        // Refresh comes a minute before the 600 s lifetime ends.
        #expect(c.pollTimeout() == t0 + .seconds(540))
        c.handleTimeout(now: t0 + .seconds(540))
        let refresh = try server.parse(c.pollTransmit())
        #expect(refresh.method == .refresh && refresh.lifetime == 600)
        server.nonce = "nonce-2"
        c.handleDatagram(server.challenge(refresh, code: 438, reason: "Stale Nonce"), now: t0 + .seconds(540))
        let retryBytes = try server.requireBytes(c.pollTransmit())
        let retry = try STUNMessage(parsing: retryBytes)
        #expect(retry.method == .refresh && retry.nonce == "nonce-2")
        #expect(server.verifies(retryBytes))
        c.handleDatagram(server.success(retry, [.lifetime(300)]), now: t0 + .seconds(540))
        #expect(c.drainEvents().isEmpty)
        #expect(c.state == .allocated)
        // The granted 300 s: the next Refresh at 240 s from now.
        #expect(c.pollTimeout() == t0 + .seconds(540 + 240))
    }

    @Test func staleNonceLoopIsBounded() throws {
        var server = FakeTURNServer()
        let c = try allocatedClient(server)
        c.handleTimeout(now: t0 + .seconds(540))
        for i in 0..<4 {
            server.nonce = "n\(i)"
            let request = try server.parse(c.pollTransmit())
            c.handleDatagram(server.challenge(request, code: 438, reason: "Stale Nonce"), now: t0 + .seconds(540))
        }
        #expect(c.pollTransmit() == nil)
        guard case .failed(let error)? = c.drainEvents().first else {
            Issue.record("no failure after endless 438s")
            return
        }
        #expect(error.code == 438)
    }

    @Test func retransmitsOnRFC5389ScheduleThenTimesOut() throws {
        let c = client()
        c.start(now: t0)
        let first = try #require(c.pollTransmit())
        var sendTimes: [Int] = [0]
        while let deadline = c.pollTimeout() {
            c.handleTimeout(now: deadline)
            let ms = Int((deadline - t0) / .milliseconds(1))
            if let again = c.pollTransmit() {
                #expect(again == first)
                sendTimes.append(ms)
            } else {
                #expect(ms == 39_500)
            }
        }
        #expect(sendTimes == [0, 500, 1500, 3500, 7500, 15_500, 31_500])
        #expect(c.drainEvents() == [.failed(TURNError(.timeout, "TURN server 127.0.0.1:3478 did not answer the Allocate request (7 tries)"))])
    }

    /// TLS (turns:) frames as TCP does (RFC 8656 §3.1, §12.5): one try, padded ChannelData.
    @Test(arguments: [TURNTransport.tcp, .tls])
    func streamTransportsSendOnceAndPadChannelData(_ transport: TURNTransport) throws {
        var config = TURNConfiguration(server: FakeTURNServer.address, username: "u", password: "p", transport: transport)
        config.reliableTimeout = .seconds(10)
        let c = TURNClient(configuration: config)
        c.start(now: t0)
        _ = c.drain()
        #expect(c.pollTimeout() == t0 + .seconds(10))
        c.handleTimeout(now: t0 + .seconds(10))
        #expect(c.pollTransmit() == nil)
        #expect(c.state == .failed)
        #expect(transport.isStream && !TURNTransport.udp.isStream)
        #expect(ChannelData.encode(channel: 0x4000, data: [1, 2, 3, 4, 5], transport: transport) == [0x40, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0])
        #expect(ChannelData.encode(channel: 0x4000, data: [1, 2, 3, 4], transport: transport) == [0x40, 0, 0, 4, 1, 2, 3, 4])
        #expect(ChannelData.encode(channel: 0x4000, data: [1, 2, 3, 4, 5], transport: .udp) == [0x40, 0, 0, 5, 1, 2, 3, 4, 5])
    }

    @Test func lostTCPConnectionFailsTheAllocation() throws {
        let c = try allocatedClient()
        c.connectionClosed()
        #expect(c.drainEvents() == [.failed(TURNError(.connectionLost, "TURN server 127.0.0.1:3478 closed the TCP connection"))])
        #expect(!c.send([1], to: peer, now: t0))
    }

    @Test func failedTLSFailsTheAllocationWithTheReason() throws {
        let config = TURNConfiguration(server: FakeTURNServer.address, username: "u", password: "p", transport: .tls)
        let c = TURNClient(configuration: config)
        c.start(now: t0)
        _ = c.drain()
        let reason = "TLS handshake with turn.test failed: certificate verify failed (self-signed certificate)"
        c.connectionFailed(reason)
        #expect(c.drainEvents() == [.failed(TURNError(.tlsFailed, "TURN server 127.0.0.1:3478: \(reason)"))])
        #expect(c.pollTimeout() == nil)
        c.connectionClosed()   // the stream's end after that adds nothing
        #expect(c.drainEvents().isEmpty)
        let fresh = TURNClient(configuration: config)
        fresh.connectionClosed()
        #expect(fresh.drainEvents() == [.failed(TURNError(.connectionLost, "TURN server 127.0.0.1:3478 closed the TLS connection"))])
    }

    @Test func permissionThenIndicationsThenChannelData() throws {
        let server = FakeTURNServer()
        let c = try allocatedClient(server)
        #expect(c.send([1, 2, 3], to: peer, now: t0))
        let requests = try c.drain().map { try STUNMessage(parsing: $0) }
        #expect(requests.map(\.method) == [.channelBind, .createPermission])
        let bind = requests[0], permit = requests[1]
        #expect(bind.channelNumber == 0x4000 && bind.xorPeerAddress == peer)
        #expect(permit.xorPeerAddress == peer)

        // Permission first: the held packet goes out as a Send indication.
        c.handleDatagram(server.success(permit), now: t0)
        let indication = try server.parse(c.pollTransmit())
        #expect(indication.method == .send && indication.messageClass == .indication)
        #expect(indication.xorPeerAddress == peer && indication.data == [1, 2, 3])
        #expect(c.send([4], to: peer, now: t0))
        #expect(try server.parse(c.pollTransmit()).data == [4])

        // Channel bound: ChannelData from now on, both ways.
        c.handleDatagram(server.success(bind), now: t0)
        #expect(c.send([9, 8, 7], to: peer, now: t0))
        #expect(c.pollTransmit() == [0x40, 0x00, 0x00, 0x03, 9, 8, 7])
        c.handleDatagram([0x40, 0x00, 0x00, 0x02, 5, 6, 0, 0], now: t0)   // padded by the server
        c.handleDatagram([0x40, 0x01, 0x00, 0x01, 5], now: t0)            // a channel we never bound
        let data = STUNMessage(method: .data, messageClass: .indication,
                               attributes: [.xorPeerAddress(peer), .data([42])]).encode(fingerprint: false)
        c.handleDatagram(data, now: t0)
        #expect(c.drainEvents() == [.data(peer: peer, bytes: [5, 6]), .data(peer: peer, bytes: [42])])
        #expect(c.stats.unknownChannel == 1)
    }

    @Test func permissionsAndChannelsAreRefreshedInTime() throws {
        let server = FakeTURNServer()
        let c = try allocatedClient(server, lifetime: 3600)
        c.send([1], to: peer, now: t0)
        for bytes in c.drain() {
            let request = try STUNMessage(parsing: bytes)
            c.handleDatagram(server.success(request), now: t0)
        }
        _ = c.drain()
        var seen: [(Int, STUNMethod)] = []
        var now = t0
        while let deadline = c.pollTimeout(), deadline < t0 + .seconds(1000) {
            now = deadline
            c.handleTimeout(now: now)
            for bytes in c.drain() {
                let request = try STUNMessage(parsing: bytes)
                seen.append((Int((now - t0) / .seconds(1)), request.method))
                c.handleDatagram(server.success(request), now: now)
            }
        }
        let permits = seen.filter { $0.1 == .createPermission }.map(\.0)
        let binds = seen.filter { $0.1 == .channelBind }.map(\.0)
        // Permissions last 300 s, channels 600 s: each refreshed before it lapses.
        #expect(permits.first.map { $0 < 300 } ?? false)
        #expect(zip(permits, permits.dropFirst()).allSatisfy { $1 - $0 < 300 })
        #expect(binds.first.map { $0 < 600 } ?? false)
        #expect(permits.count >= 3 && binds.count >= 1)
        #expect(c.state == .allocated)
    }

    @Test func closeReleasesTheAllocation() throws {
        let server = FakeTURNServer()
        let c = try allocatedClient(server)
        c.close(now: t0 + .seconds(5))
        let refreshBytes = try server.requireBytes(c.pollTransmit())
        let refresh = try STUNMessage(parsing: refreshBytes)
        #expect(refresh.method == .refresh && refresh.lifetime == 0)
        #expect(server.verifies(refreshBytes))
        #expect(c.state == .releasing)
        #expect(!c.send([1], to: peer, now: t0))
        c.handleDatagram(server.success(refresh, [.lifetime(0)]), now: t0 + .seconds(5))
        #expect(c.drainEvents() == [.released])
        #expect(c.state == .closed)
    }

    @Test func forgedSuccessResponseIsIgnored() throws {
        var forger = FakeTURNServer()
        forger.password = "not-the-servers"
        let server = FakeTURNServer()
        let c = client()
        c.start(now: t0)
        c.handleDatagram(server.challenge(try server.parse(c.pollTransmit())), now: t0)
        let request = try server.parse(c.pollTransmit())
        c.handleDatagram(forger.allocated(request), now: t0)
        #expect(c.state == .allocating)
        #expect(c.stats.badIntegrity == 1)
        c.handleDatagram(server.allocated(request), now: t0)
        #expect(c.state == .allocated)
    }

    @Test func garbageFromTheServerNeverTraps() throws {
        var rng = SplitMix64(seed: 11)
        let server = FakeTURNServer()
        for round in 0..<300 {
            let c = round % 2 == 0 ? try allocatedClient(server) : client()
            if round % 2 == 1 { c.start(now: t0) }
            c.send([1, 2], to: peer, now: t0)
            let requests = c.drain().compactMap { try? STUNMessage(parsing: $0) }
            // Valid responses with bytes flipped, truncated or extended, and pure noise.
            var inputs: [[UInt8]] = requests.flatMap { [server.success($0), server.challenge($0), server.allocated($0)] }
            inputs.append((0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            inputs.append([0x40, 0x00, 0xFF, 0xFF, 1])
            for var bytes in inputs {
                switch Int.random(in: 0..<4, using: &rng) {
                case 0 where !bytes.isEmpty:
                    let i = Int.random(in: 0..<bytes.count, using: &rng)
                    bytes[i] ^= UInt8.random(in: 1...255, using: &rng)
                case 1: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
                case 2: bytes += [UInt8.random(in: 0...255, using: &rng)]
                default: break
                }
                c.handleDatagram(bytes, now: t0)
            }
            if let deadline = c.pollTimeout() { c.handleTimeout(now: deadline) }
            _ = c.drain()
            _ = c.drainEvents()
        }
    }

    @Test func fuzzEntryRunsOnSeeds() {
        var rng = SplitMix64(seed: 5)
        fuzzTURN([0x40, 0x00, 0x00, 0x02, 1, 2])
        fuzzTURN([])
        for _ in 0..<200 { fuzzTURN((0..<Int.random(in: 0...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }) }
    }

    @Test func streamFramerSplitsMessagesAndChannelData() throws {
        let server = FakeTURNServer()
        let request = STUNMessage(method: .allocate, messageClass: .request)
        let stun = server.success(request)
        let channel = ChannelData.encode(channel: 0x4001, data: [1, 2, 3], transport: .tcp)
        var framer = TURNStreamFramer()
        let stream = stun + channel + stun
        var frames: [[UInt8]] = []
        // Byte-sized pieces: frames come out only when whole.
        for byte in stream { frames += try framer.append([byte]) }
        #expect(frames == [stun, channel, stun])
        #expect(throws: TURNStreamFramer.FramingError.notTURN(firstByte: 0x80)) { try framer.append([0x80, 0, 0, 0]) }
    }
}
