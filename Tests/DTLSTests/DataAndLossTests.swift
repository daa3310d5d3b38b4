import SeededRandom
import Testing
@testable import DTLS

@Suite struct DataAndLossTests {
    @Test func applicationDataFlowsBothWays() throws {
        let link = try Link()
        #expect(throws: DTLSError.self) { try link.client.send([1, 2, 3]) }
        try link.connect()
        try link.client.send(Array("hello server".utf8))
        try link.client.send([0, 1, 2])
        try link.server.send(Array(repeating: 0xAA, count: 1000))
        link.pump()
        #expect(link.serverEvents.applicationData == [Array("hello server".utf8), [0, 1, 2]])
        #expect(link.clientEvents.applicationData == [Array(repeating: 0xAA, count: 1000)])
        #expect(link.client.stats.applicationRecordsOut == 2 && link.server.stats.applicationRecordsIn == 2)
        #expect(link.client.stats.applicationRecordsIn == 1)
    }

    @Test func garbageIsDroppedCountedAndHandshakeCompletes() throws {
        let link = try Link()
        let other = try Link()
        other.start()
        let foreignClientHello = try #require(other.client.pollTransmit())
        var random = SplitMix64(seed: 42)
        var garbage: [[UInt8]] = []
        for index in 0..<20 {
            garbage.append([UInt8(20 + index * 2)] + random.bytes(Int(random.next() % 200)))
        }

        link.start()
        // Before the server has seen anything: garbage and a truncated copy of the real ClientHello.
        let clientHello = try #require(link.client.pollTransmit())
        link.sentByClient.append(clientHello)
        for datagram in garbage { link.server.handleDatagram(datagram, now: link.now) }
        link.server.handleDatagram(Array(clientHello.prefix(40)), now: link.now)
        link.server.handleDatagram(Array(clientHello.prefix(7)), now: link.now)
        #expect(link.server.state == .connecting)
        #expect(link.server.stats.droppedRecords >= garbage.count + 2)
        link.server.handleDatagram(clientHello, now: link.now)
        // Mid-handshake, the client sees garbage and the server a ClientHello of another connection.
        for datagram in garbage { link.client.handleDatagram(datagram, now: link.now) }
        link.server.handleDatagram(foreignClientHello, now: link.now)
        #expect(link.client.stats.droppedRecords >= garbage.count)
        link.pump()
        #expect(link.client.state == .connected && link.server.state == .connected)
        #expect(link.clientEvents.failure == nil && link.serverEvents.failure == nil)
    }

    @Test func foreignAndReplayedRecordsAfterConnectingAreDroppedAndCounted() throws {
        let link = try Link()
        try link.connect()
        let other = try Link()
        try other.connect()
        try other.client.send([9, 9, 9])
        let foreignApplicationData = try #require(other.client.pollTransmit())
        let foreignClientHello = try #require(other.sentByClient.first)

        try link.client.send([1])
        let genuine = try #require(link.client.pollTransmit())
        link.server.handleDatagram(genuine, now: link.now)
        let before = link.server.stats.droppedRecords
        link.server.handleDatagram(genuine, now: link.now)                // replay
        link.server.handleDatagram(foreignApplicationData, now: link.now) // wrong keys
        link.server.handleDatagram(foreignClientHello, now: link.now)     // stale epoch 0
        link.server.handleDatagram([23, 0xFE, 0xFD, 0, 1, 0, 0], now: link.now) // truncated header
        #expect(link.server.stats.droppedRecords == before + 4)
        link.drainEvents()
        #expect(link.serverEvents.applicationData == [[1]])
        #expect(link.server.state == .connected)
        try link.client.send([2])
        link.pump()
        #expect(link.serverEvents.applicationData == [[1], [2]])
    }

    @Test func lostServerFlightIsRetransmittedAfterTimeout() throws {
        // 16 ms: just above the 15 ms under which OpenSSL counts a timer as already expired, so
        // the first server flight goes out once and is lost before any retransmission.
        let link = try Link(retransmitTimeout: .milliseconds(16))
        link.start()
        var droppedFlight = false
        link.pump { sender, _ in
            // Lose everything the server sends until handleTimeout has retransmitted.
            if sender == .server && link.server.stats.retransmissions == 0 { droppedFlight = true; return true }
            return false
        }
        #expect(droppedFlight)
        #expect(link.client.state == .connecting && link.server.state == .connecting)
        #expect(link.client.pollTransmit() == nil && link.server.pollTransmit() == nil)
        #expect(try #require(link.server.pollTimeout()) > link.now)
        link.advanceOpenSSLClock(by: .milliseconds(2))
        let due = try #require(link.server.pollTimeout())
        #expect(due <= link.now)
        link.server.handleTimeout(now: link.now)
        #expect(link.server.stats.retransmissions == 1)
        link.pump()
        #expect(link.client.state == .connected && link.server.state == .connected)
        #expect(link.clientEvents.connected?.0 != nil)
    }

    @Test func lostFinalServerFlightIsRecoveredByTheClientsRetransmission() throws {
        let link = try Link(retransmitTimeout: .milliseconds(16))   // see above
        link.start()
        link.pump { sender, _ in
            // Lose the server's CCS + Finished: the server is connected, the client is not.
            sender == .server && link.server.state == .connected && link.client.stats.retransmissions == 0
        }
        #expect(link.server.state == .connected)
        #expect(link.client.state == .connecting)
        link.advanceOpenSSLClock(by: .milliseconds(2))
        #expect(try #require(link.client.pollTimeout()) <= link.now)
        link.client.handleTimeout(now: link.now)
        #expect(link.client.stats.retransmissions == 1)
        link.pump()
        #expect(link.client.state == .connected && link.server.state == .connected)
        let clientKeys = try #require(link.clientEvents.connected?.0)
        let serverKeys = try #require(link.serverEvents.connected?.0)
        #expect(clientKeys.localKey == serverKeys.remoteKey)
        try link.client.send([7])
        link.pump()
        #expect(link.serverEvents.applicationData == [[7]])
    }

    @Test func pollTimeoutFollowsTheGivenClock() throws {
        let link = try Link(retransmitTimeout: .seconds(1))
        #expect(link.client.pollTimeout() == nil)
        link.client.start(now: link.now)
        let deadline = try #require(link.client.pollTimeout())
        #expect(deadline > link.now && deadline <= link.now.advanced(by: .seconds(1)))
        // Not yet due by OpenSSL's clock: nothing is retransmitted.
        link.client.handleTimeout(now: link.now)
        #expect(link.client.stats.retransmissions == 0)
    }

    @Test func closeNotifyClosesThePeer() throws {
        let link = try Link()
        try link.connect()
        link.client.close()
        #expect(link.client.state == .closed)
        link.pump()
        #expect(link.server.state == .closed)
        #expect(link.serverEvents.closedCount == 1)
        #expect(link.clientEvents.closedCount == 0)
        #expect(throws: DTLSError.self) { try link.server.send([1]) }
    }
}
