import SeededRandom
import Testing
@testable import DTLS

@Suite struct FuzzTests {
    /// Thousands of random and mutated datagrams never trap, and cannot break an established
    /// connection: nothing unauthenticated gets past the record layer once both sides are on epoch 1.
    @Test func mutatedAndRandomDatagramsDoNotDisturbAConnection() throws {
        let link = try Link()
        try link.connect()
        try link.client.send(Array("before".utf8))
        try link.server.send(Array("before".utf8))
        link.pump()
        let seeds = link.sentByClient + link.sentByServer
        var random = SplitMix64(seed: 7)
        for round in 0..<3000 {
            var datagram: [UInt8]
            let base = seeds[Int(random.next() % UInt64(seeds.count))]
            switch round % 4 {
            case 0:  // flip one byte
                datagram = base
                if !datagram.isEmpty { datagram[Int(random.next() % UInt64(datagram.count))] ^= UInt8(1 + random.next() % 255) }
            case 1:  // cut short
                datagram = Array(base.prefix(Int(random.next() % UInt64(base.count + 1))))
            case 2:  // random bytes in the DTLS range
                datagram = [UInt8(20 + random.next() % 44)] + random.bytes(Int(random.next() % 300))
            default:  // a valid-looking header over random bytes
                let body = random.bytes(Int(random.next() % 100))
                datagram = [UInt8(20 + random.next() % 4), 0xFE, 0xFD, 0, UInt8(random.next() % 3)] + random.bytes(6)
                    + [UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
            }
            if round % 2 == 0 { link.server.handleDatagram(datagram, now: link.now) } else { link.client.handleDatagram(datagram, now: link.now) }
        }
        link.pump()
        #expect(link.client.state == .connected && link.server.state == .connected)
        #expect(link.client.stats.droppedRecords > 1000 && link.server.stats.droppedRecords > 1000)
        try link.client.send(Array("after".utf8))
        link.pump()
        #expect(link.serverEvents.applicationData == [Array("before".utf8), Array("after".utf8)])
        #expect(link.clientEvents.applicationData == [Array("before".utf8)])
    }

    /// During the handshake epoch 0 is unauthenticated, so a corrupted message may legitimately
    /// fail it; what matters is that nothing traps and the outcome is a clean state.
    @Test func mutatedHandshakeNeverTraps() throws {
        var random = SplitMix64(seed: 99)
        for trial in 0..<40 {
            let link = try Link()
            link.start()
            link.pump { _, datagram in
                let corrupt = random.next() % 3 == 0
                if corrupt {
                    var copy = datagram
                    if !copy.isEmpty { copy[Int(random.next() % UInt64(copy.count))] ^= 0x5A }
                    if trial % 2 == 0 { link.server.handleDatagram(copy, now: link.now) } else { link.client.handleDatagram(copy, now: link.now) }
                }
                return false
            }
            for transport in [link.client, link.server] {
                #expect([DTLSState.connecting, .connected, .failed, .closed].contains(transport.state))
            }
        }
    }
}
