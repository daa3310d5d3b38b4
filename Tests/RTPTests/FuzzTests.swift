import SeededRandom
import Testing
@testable import RTP
import TestSupport

/// Every prefix and thousands of random mutations of valid packets must parse or throw with an
/// offset inside the input; whatever parses must round-trip (checked by the fuzz entry points).
@Suite struct FuzzTests {
    static var rtpSamples: [[UInt8]] {
        var samples = [RTPPacketTests.oneByteVector,
                       hex("A0 60 0002 00000000 00000001 AABB 000003"),
                       hex("90 60 0001 00000002 00000003 10000002 0500 00 C8 03 616263 FF"),
                       hex("90 60 0001 00000002 00000003 ABCD0002 0102030405060708 99")]
        var p = RTPPacket(marker: true, payloadType: 111, sequenceNumber: 9, timestamp: 10, ssrc: 11,
                          csrcs: [1, 2], payload: Array(0..<40), paddingLength: 7)
        p.setExtension(id: 1, data: RTPExtensionCodec.encodeMID("0"))
        p.setExtension(id: 3, data: RTPExtensionCodec.encodeAbsSendTime(seconds: 3.25))
        p.setExtension(id: 5, data: RTPExtensionCodec.encodeTransportSequence(77))
        samples.append(p.serialize())
        return samples
    }

    static var rtcpSamples: [[UInt8]] {
        var samples = [RTCPReportTests.srSdes, TransportCCTests.runAndTwoBit, TransportCCTests.oneBit,
                       hex("81 CD 0003 00000001 00000002 0064 0005"),
                       hex("8F CE 0005 00000001 00000000 52454D42 01 0BD090 12345678"),
                       hex("84 CE 0006 00000001 00000000 0000000A 07 000000 0000000B 08 000000"),
                       hex("83 CC 0003 00000001 54455354 AABBCCDD"),
                       hex("A0 C9 0002 DEADBEEF 00000004")]
        samples.append(RTCPPacket.serializeCompound([
            .receiverReport(ReceiverReport(ssrc: 1, reports: [ReceptionReport(ssrc: 2, cumulativeLost: -5)])),
            .sourceDescription(SourceDescription(ssrc: 1, cname: "x")),
            .goodbye(Goodbye(ssrcs: [1], reason: "done")),
            .pli(senderSSRC: 1, mediaSSRC: 2),
        ]))
        return samples
    }

    @Test func everyRTPPrefix() {
        for sample in Self.rtpSamples {
            for n in 0...sample.count {
                let prefix = Array(sample.prefix(n))
                fuzzRTP(prefix)
                do {
                    _ = try RTPPacket(parsing: prefix)
                } catch {
                    #expect(error.offset >= 0 && error.offset <= n, "\(error)")
                }
            }
        }
    }

    @Test func everyRTCPPrefix() {
        for sample in Self.rtcpSamples {
            for n in 0...sample.count {
                let prefix = Array(sample.prefix(n))
                fuzzRTCP(prefix)
                do {
                    _ = try RTCPPacket.parseCompound(prefix)
                } catch {
                    #expect(error.offset >= 0 && error.offset <= n, "\(error)")
                }
            }
        }
    }

    static func mutate(_ bytes: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var b = bytes
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<5, using: &rng) {
            case 0 where !b.isEmpty:   // flip a bit
                let i = Int.random(in: 0..<b.count, using: &rng)
                b[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
            case 1 where !b.isEmpty:   // random byte
                b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 2 where !b.isEmpty:   // truncate
                b.removeLast(Int.random(in: 0...b.count, using: &rng))
            case 3:                    // insert
                b.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...b.count, using: &rng))
            default:                   // append junk
                b += (0..<Int.random(in: 1...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
        }
        return b
    }

    @Test func tenThousandRTPMutations() {
        var rng = SplitMix64(seed: 0x5254_5031)
        let samples = Self.rtpSamples
        var parsedCount = 0
        for i in 0..<10_000 {
            let m = Self.mutate(samples[i % samples.count], &rng)
            fuzzRTP(m)
            do {
                _ = try RTPPacket(parsing: m)
                parsedCount += 1
            } catch {
                #expect(error.offset >= 0 && error.offset <= m.count)
            }
        }
        // Mutations must exercise both outcomes.
        #expect(parsedCount > 100 && parsedCount < 10_000)
    }

    @Test func tenThousandRTCPMutations() {
        var rng = SplitMix64(seed: 0x5254_4350)
        let samples = Self.rtcpSamples
        var parsedCount = 0
        for i in 0..<10_000 {
            let m = Self.mutate(samples[i % samples.count], &rng)
            fuzzRTCP(m)
            do {
                _ = try RTCPPacket.parseCompound(m)
                parsedCount += 1
            } catch {
                #expect(error.offset >= 0 && error.offset <= m.count)
            }
        }
        #expect(parsedCount > 100 && parsedCount < 10_000)
    }

    @Test func randomGarbage() {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<5_000 {
            let n = Int.random(in: 0..<80, using: &rng)
            var bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Half the time, make the first byte look like version 2 so parsers go deeper.
            if !bytes.isEmpty && Bool.random(using: &rng) { bytes[0] = 0x80 | (bytes[0] & 0x3F) }
            fuzzRTP(bytes)
            fuzzRTCP(bytes)
            _ = classifyPacket(bytes)
        }
    }

    @Test func roundTripOfEveryPacketType() throws {
        let all: [RTCPPacket] = [
            .senderReport(SenderReport(ssrc: 1, ntpTimestamp: NTPTime.ntp(unixSeconds: 1_700_000_000.25), rtpTimestamp: 3,
                                       packetCount: 4, octetCount: 5, reports: [ReceptionReport(ssrc: 9, fractionLost: 1)])),
            .receiverReport(ReceiverReport(ssrc: 2)),
            .sourceDescription(SourceDescription(ssrc: 3, cname: "{d0c4}")),
            .goodbye(Goodbye(ssrcs: [4, 5], reason: "shutdown")),
            .nack(GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [1, 2, 3, 30])),
            .pli(senderSSRC: 6, mediaSSRC: 7),
            .fir(FullIntraRequest(senderSSRC: 8, entries: [.init(ssrc: 9, sequenceNumber: 1)])),
            .remb(REMB(senderSSRC: 10, bitrate: 2_500_000, ssrcs: [11, 12])),
            .transportCC(TransportCCTests.expectedRunAndTwoBit),
            .unknown(packetType: 207, count: 0, body: [1, 2, 3, 4, 5, 6, 7, 8]),
        ]
        for p in all {
            #expect(try RTCPPacket.parseCompound(p.serialize()) == [p])
        }
        let compound = RTCPPacket.serializeCompound(all)
        #expect(try RTCPPacket.parseCompound(compound) == all)
        fuzzRTCP(compound)
    }
}
