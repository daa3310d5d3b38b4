import Testing
@testable import RTP

/// `write(_:mid:…)` (the mid from a forwarder's inline record) writes what `write(_:)` with
/// the mid in the patch writes.
@Suite struct RTPHeaderPatchMidTests {
    @Test(arguments: [[UInt8](), Array("0".utf8), Array("video-1".utf8), Array(repeating: 0x61, count: 16), Array(repeating: 0x62, count: 20)])
    func inlineMidWritesTheSameBytes(_ mid: [UInt8]) throws {
        let source = RTPPacket(marker: true, payloadType: 100, sequenceNumber: 7, timestamp: 8, ssrc: 9, csrcs: [1],
                               extensions: [RTPHeaderExtension(id: 7, data: [0x03]), RTPHeaderExtension(id: 1, data: [1, 2])],
                               payload: Array(repeating: 0x5A, count: 900), paddingLength: 3).serialize()
        let patch = RTPHeaderPatch(ssrc: 0xCAFE_F00D, sequenceNumber: 4242, timestamp: 0x1234_5678, payloadType: 102,
                                   midID: 4, mid: mid, orientationSourceID: 7, orientationID: 3)
        var withoutMid = patch
        withoutMid.mid = [0xFF]   // ignored by the inline form
        try source.withUnsafeBytes { raw in
            let view = try RTPHeaderView(raw)
            for rtx in [nil, UInt16(99)] as [UInt16?] {
                var a = [UInt8](repeating: 0xEE, count: 2048), b = a
                let wa = a.withUnsafeMutableBytes { view.write(patch, rtxOriginalSequence: rtx, into: $0) }
                let wb = b.withUnsafeMutableBytes { out in
                    mid.withUnsafeBytes { view.write(withoutMid, mid: $0, rtxOriginalSequence: rtx, into: out) }
                }
                let la = try #require(wa).length
                #expect(wa == wb)
                #expect(a[0..<la] == b[0..<la])
            }
        }
    }
}
