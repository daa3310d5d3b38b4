import Codecs
import Media
import RTPMedia

/// What a container header needs to know, read off the first samples.
enum SampleFormat {
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
