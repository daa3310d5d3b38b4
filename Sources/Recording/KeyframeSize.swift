import Codecs
import Media
import RTPMedia

/// The picture size a keyframe carries: its H.264 SPS, or the VP8 keyframe header (RFC 6386
/// §9.1). For a container's header, and for a relay reading a publisher's size off the wire.
public enum KeyframeSize {
    /// `frame`: an H.264 access unit (Annex B) or a VP8 frame (no payload descriptor).
    public static func of(_ frame: [UInt8], codec: VideoCodecType) -> (width: Int, height: Int)? {
        switch codec {
        case .h264:
            for r in AnnexB.nalUnitRanges(frame) where frame[r.lowerBound] & 0x1F == H264NALType.sps {
                if let sps = try? H264SPS(nal: Array(frame[r])) { return (sps.width, sps.height) }
            }
            return nil
        case .vp8:
            guard frame.count >= 10, frame[0] & 1 == 0, frame[3] == 0x9d, frame[4] == 0x01, frame[5] == 0x2a else { return nil }
            return ((Int(frame[6]) | Int(frame[7]) << 8) & 0x3fff, (Int(frame[8]) | Int(frame[9]) << 8) & 0x3fff)
        }
    }
}
