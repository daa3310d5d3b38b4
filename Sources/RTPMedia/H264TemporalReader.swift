/// The temporal layer of an H.264 RTP packet as the stream itself says it: a slice whose
/// nal_ref_idc is 0 belongs to a picture nothing references (ITU-T H.264 §7.4.1), so it can be
/// left out and the rest still decodes — layer 1; every other slice is layer 0. Any encoder's
/// non-reference pictures are layer 1 so; OpenH264's temporal layers (ours with `scalabilityMode`
/// L1T2/L1T3, Chromium's software H.264) put their top layer there (nal_ref_idc 3 base, 1 middle,
/// 0 top), so a relay can halve their frame rate with no signalling a receiver must read —
/// Chromium's H.264 receiver reads no layer from RTP. The middle layer of L1T3 is not told apart:
/// other encoders write nal_ref_idc 1 or 2 on every reference picture (x264: 2 on P, 3 on IDR),
/// and taking those for an upper layer would leave a stream of keyframes. A quarter of the frames
/// needs the dependency descriptor. A non-reference frame is always a layer sync: it references
/// only pictures a receiver of layer 0 has. Stateless.
public enum H264TemporalReader {
    /// The layer of a packet's payload (RFC 6184: a single NAL unit, STAP-A or FU-A); nil for
    /// what carries no slice of a picture (parameter sets alone, SEI, unknown types).
    public static func mark(_ payload: UnsafeRawBufferPointer) -> TemporalMark? {
        guard let first = payload.first else { return nil }
        let startsFrame: Bool
        switch first & 0x1F {
        case H264NALType.slice, H264NALType.idr:
            startsFrame = payload.count > 1 && payload[1] & 0x80 != 0   // ue(v) first_mb_in_slice = 0
        case H264NALType.stapA:
            startsFrame = true   // parameter sets ahead of a keyframe's slice, or a picture's small slices
        case H264NALType.fuA:
            guard payload.count > 2, [H264NALType.slice, H264NALType.idr].contains(payload[1] & 0x1F) else { return nil }
            startsFrame = payload[1] & 0x80 != 0 && payload[2] & 0x80 != 0
        default:
            return nil
        }
        let referenced = first & 0x60 != 0   // STAP-A and FU-A carry their units' nal_ref_idc
        return TemporalMark(layer: referenced ? 0 : 1, sync: !referenced, startsFrame: startsFrame)
    }
}
