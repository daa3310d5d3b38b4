import SeededRandom
import Testing
@testable import DTLS

/// RFC 6347 §4.1.2.7: once connected, records that cannot be authenticated are discarded and
/// the association goes on. OpenSSL 3.0.19 ends the connection on two kinds of them (a record
/// shorter than the suite's overhead, a bad encrypt-then-MAC MAC); neither may get that far.
@Suite struct StrayRecordTests {
    static let suites = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
                         "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA"]

    func record(type: UInt8, sequence: UInt8, body: [UInt8]) -> [UInt8] {
        [type, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0x7F, sequence, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    /// Every content type and every body length from 0 to 120 bytes, as a forged epoch-1 record
    /// to both sides; after each one a genuine record still decrypts, in both directions.
    @Test(arguments: suites)
    func forgedEpochOneRecordsAreDroppedAndTheConnectionGoesOn(suite: String) throws {
        let link = try Link(cipherSuites: [suite])
        try link.connect()
        #expect(link.client.cipherSuite == suite && link.server.cipherSuite == suite)
        var random = SplitMix64(seed: 31)
        var expected: [[UInt8]] = []
        var forged = 0
        for length in 0...120 {
            for type: UInt8 in 20...23 {
                let stray = record(type: type, sequence: UInt8(truncatingIfNeeded: length), body: random.bytes(length))
                link.client.handleDatagram(stray, now: link.now)
                link.server.handleDatagram(stray, now: link.now)
                forged += 1
            }
            let message = Array("genuine \(length)".utf8)
            try link.client.send(message)
            try link.server.send(message)
            link.pump()
            expected.append(message)
            #expect(link.client.state == .connected && link.server.state == .connected, "\(suite): a \(length)-byte body ended it")
            if link.client.state != .connected || link.server.state != .connected { return }
        }
        #expect(link.serverEvents.applicationData == expected)
        #expect(link.clientEvents.applicationData == expected)
        #expect(link.clientEvents.failure == nil && link.serverEvents.failure == nil)
        // Application data strays are counted; those of other types OpenSSL discards unseen
        // unless they are too short to be genuine, which the filter counts.
        #expect(link.client.stats.droppedRecords >= forged / 4 && link.server.stats.droppedRecords >= forged / 4)
    }

    /// The datagram that broke main (round 31 of the fuzz test): a 7-byte application-data body.
    @Test func theSevenByteRecordIsDroppedAndCounted() throws {
        let link = try Link()
        try link.connect()
        let before = link.client.stats.droppedRecords
        link.client.handleDatagram(record(type: 23, sequence: 9, body: [1, 2, 3, 4, 5, 6, 7]), now: link.now)
        #expect(link.client.stats.droppedRecords == before + 1)
        #expect(link.client.pollTransmit() == nil, "no alert goes to the peer")
        try link.server.send([42])
        link.pump()
        #expect(link.clientEvents.applicationData == [[42]])
        #expect(link.client.state == .connected && link.server.state == .connected)
    }

    /// A CBC suite runs MAC-then-encrypt: a forged record of a plausible length fails its MAC and is
    /// discarded silently (under encrypt-then-MAC OpenSSL would answer with a fatal bad_record_mac).
    @Test func cbcSuitesDoNotNegotiateEncryptThenMAC() throws {
        let link = try Link(cipherSuites: ["ECDHE-ECDSA-AES128-SHA"])
        try link.connect()
        var random = SplitMix64(seed: 5)
        for length in [48, 64, 80, 1000] {
            link.server.handleDatagram(record(type: 23, sequence: 1, body: random.bytes(length)), now: link.now)
        }
        #expect(link.server.pollTransmit() == nil)
        try link.client.send([7])
        link.pump()
        #expect(link.serverEvents.applicationData == [[7]])
        #expect(link.server.stats.droppedRecords == 4)
    }
}
