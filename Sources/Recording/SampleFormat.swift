import Codecs
import Media
import RTPMedia

/// What a container header needs to know, read off the first samples.
enum SampleFormat {
    /// Picture size of a keyframe: the H.264 SPS, or the VP8 keyframe header (RFC 6386 §9.1).
    static func size(keyframe data: [UInt8], codec: VideoCodecType) -> (width: Int, height: Int)? {
        switch codec {
        case .h264:
            for r in AnnexB.nalUnitRanges(data) where data[r.lowerBound] & 0x1F == H264NALType.sps {
                if let sps = try? H264SPS(nal: Array(data[r])) { return (sps.width, sps.height) }
            }
            return nil
        case .vp8:
            guard data.count >= 10, data[0] & 1 == 0, data[3] == 0x9d, data[4] == 0x01, data[5] == 0x2a else { return nil }
            return ((Int(data[6]) | Int(data[7]) << 8) & 0x3fff, (Int(data[8]) | Int(data[9]) << 8) & 0x3fff)
        }
    }

    /// The SPS and PPS of an H.264 keyframe as Annex B, the muxers' codec private data.
    static func parameterSets(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for r in AnnexB.nalUnitRanges(data) {
            let type = data[r.lowerBound] & 0x1F
            if type == H264NALType.sps || type == H264NALType.pps { out += AnnexB.startCode + data[r] }
        }
        return out
    }

    /// Channels of an Opus stream from a packet's TOC byte (RFC 6716 §3.1, the s bit).
    static func opusChannels(_ packet: [UInt8]) -> Int {
        guard let toc = packet.first else { return 1 }
        return toc & 0x04 != 0 ? 2 : 1
    }

    /// An Opus packet's duration in µs (0 when malformed).
    static func opusDuration(_ packet: [UInt8]) -> Int64 {
        (try? OpusDepacketizer.duration(of: packet)).map(Int64.init) ?? 0
    }
}
