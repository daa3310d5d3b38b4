import Media
import Testing
@testable import Codecs

@Suite struct H264BitstreamTests {
    @Test func splitsAnnexBWithThreeAndFourByteStartCodes() {
        let stream: [UInt8] = [0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 0, 1, 0x65, 4, 5]
        let ranges = H264Bitstream.nalUnitRanges(stream)
        #expect(ranges == [4..<7, 10..<12, 17..<20])
        #expect(H264Bitstream.nalTypes(stream) == [7, 8, 5])
        #expect(H264Bitstream.containsIDR(stream))
    }

    @Test func degenerateStreamsGiveNoUnits() {
        for bytes: [UInt8] in [[], [0], [0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 1, 0, 0], [1, 2, 3, 4, 5]] {
            #expect(H264Bitstream.nalUnitRanges(bytes).isEmpty, "\(bytes)")
        }
    }

    @Test func removesEmulationPrevention() {
        #expect(H264Bitstream.rbsp([0x67, 0, 0, 3, 1, 0, 0, 3]) == [0x67, 0, 0, 1, 0, 0])
    }

    @Test func parsesEncoderSPSAndRejectsDamagedOnes() throws {
        let encoder = try OpenH264Encoder(settings: VideoEncoderSettings(width: 1280, height: 720, bitrate: 1_500_000))
        let frame = VideoFrame(buffer: VideoFrameBuffer(format: .i420, width: 1280, height: 720), timestampNs: 0)
        let key = try #require(try encoder.encode(frame, rtpTimestamp: 0, forceKeyframe: false))
        let sps = try #require(try H264Bitstream.firstSPS(key.data))
        #expect(sps.profileIdc == 66 && sps.levelIdc == 31 && sps.width == 1280 && sps.height == 720)
        #expect(sps.isConstrainedBaseline)
        let range = try #require(H264Bitstream.nalUnitRanges(key.data).first)
        let nal = Array(key.data[range])
        // Every truncation either parses or throws; none traps.
        for n in 0..<nal.count {
            _ = try? H264SPS(nal: Array(nal.prefix(n)))
        }
        #expect(throws: MediaError.self) { try H264SPS(nal: Array(nal.prefix(4))) }
        #expect(throws: MediaError.self) { try H264SPS(nal: [0x68, 1, 2, 3]) }
        // Random bodies behind an SPS header: never a trap.
        var seed: UInt32 = 7
        for _ in 0..<500 {
            let body = (0..<Int(seed % 40)).map { _ -> UInt8 in seed = seed &* 1_103_515_245 &+ 12345; return UInt8(truncatingIfNeeded: seed >> 16) }
            _ = try? H264SPS(nal: [0x67] + body)
            seed = seed &* 69069 &+ 1
        }
    }
}
