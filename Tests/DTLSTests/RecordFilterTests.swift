import Testing
@testable import DTLS

@Suite struct RecordFilterTests {
    func record(type: UInt8 = 22, version: (UInt8, UInt8) = (0xFE, 0xFD), epoch: UInt16 = 0, body: [UInt8]) -> [UInt8] {
        [type, version.0, version.1, UInt8(epoch >> 8), UInt8(epoch & 0xFF), 0, 0, 0, 0, 0, 1,
         UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    @Test func keepsWellFormedRecordsTogether() {
        let datagram = record(body: [1, 2, 3]) + record(type: 20, epoch: 0, body: [1]) + record(type: 22, epoch: 1, body: [9, 9])
        let result = RecordFilter.screen(datagram, handshakeComplete: false)
        #expect(result.kept == datagram)
        #expect(result.dropped == 0)
    }

    @Test func dropsTruncatedHeaderAndBody() {
        let good = record(body: [1, 2, 3])
        let truncatedBody = Array(record(body: [1, 2, 3, 4, 5]).dropLast(2))
        var result = RecordFilter.screen(good + truncatedBody, handshakeComplete: false)
        #expect(result.kept == good)
        #expect(result.dropped == 1)
        result = RecordFilter.screen(good + [22, 0xFE, 0xFD, 0], handshakeComplete: false)
        #expect(result.kept == good)
        #expect(result.dropped == 1)
    }

    @Test func dropsUnknownTypeAndVersion() {
        #expect(RecordFilter.screen(record(type: 24, body: [0]), handshakeComplete: false).dropped == 1)
        #expect(RecordFilter.screen(record(version: (3, 3), body: [0]), handshakeComplete: false).dropped == 1)
        #expect(RecordFilter.screen(record(version: (0xFE, 0xFF), body: [0]), handshakeComplete: false).dropped == 0)
    }

    @Test func dropsEpochsThatCannotBelongHere() {
        let stale = record(epoch: 0, body: [1])
        let current = record(type: 23, epoch: 1, body: [2])
        let future = record(type: 23, epoch: 2, body: [3])
        let result = RecordFilter.screen(stale + future + current, handshakeComplete: true)
        #expect(result.kept == current)
        #expect(result.dropped == 2)
        #expect(result.applicationRecords == 1)
        #expect(RecordFilter.screen(stale, handshakeComplete: false).kept == stale)
    }

    @Test func dropsEpochOneRecordsShorterThanTheSuitesOverhead() {
        let short = record(type: 23, epoch: 1, body: Array(repeating: 7, count: 23))
        let long = record(type: 23, epoch: 1, body: Array(repeating: 7, count: 24))
        let handshake = record(type: 22, epoch: 0, body: [1])
        let result = RecordFilter.screen(short + long + handshake, handshakeComplete: false, minimumProtectedLength: 24)
        #expect(result.kept == long + handshake)
        #expect(result.dropped == 1 && result.tooShort == 1)
        #expect(result.applicationRecords == 1)
        // Before the suite is known (0) nothing is screened by length.
        #expect(RecordFilter.screen(short, handshakeComplete: false).kept == short)
    }

    @Test func emptyDatagramIsNothing() {
        let result = RecordFilter.screen([], handshakeComplete: false)
        #expect(result.kept.isEmpty && result.dropped == 0)
    }
}
