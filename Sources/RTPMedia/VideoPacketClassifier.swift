import Media

/// What the jitter buffer needs to know about one video payload before the frame is whole
/// (and a recorder that cuts files: where a keyframe starts).
public struct VideoPacketInfo: Sendable {
    /// Empty payload: padding (probing); it fills its sequence slot but belongs to no frame.
    var isPadding = false
    /// Could be the first packet of a frame (H.264 single NAL / STAP-A / FU-A start; VP8 S=1 PID=0).
    public var startsFrame = false
    /// Starts a frame whatever came before it (VP8 S=1 PID=0; H.264 beginning with an AUD or SPS).
    var certainStart = false
    /// May belong to a keyframe (H.264 IDR slice; VP8 first partition with P=0), so worth
    /// assembling to find out.
    public var keyHint = false
    var malformed = false

    /// The first packet of a (likely) keyframe.
    public var startsKeyframe: Bool { startsFrame && keyHint }

    public init(codec: VideoCodecType, payload: [UInt8]) {
        guard let b0 = payload.first else {
            isPadding = true
            return
        }
        switch codec {
        case .h264: classifyH264(payload, type: b0 & 0x1F)
        case .vp8: classifyVP8(payload)
        }
        if malformed { startsFrame = false; certainStart = false; keyHint = false }
    }

    private mutating func classifyH264(_ p: [UInt8], type: UInt8) {
        switch type {
        case 1...23:
            startsFrame = true
            certainStart = type == H264NALType.sps || type == H264NALType.accessUnitDelimiter
            keyHint = type == H264NALType.idr || type == H264NALType.sps
        case H264NALType.stapA:
            var offset = 1
            var first = true
            while offset < p.count {
                guard offset + 2 <= p.count else { malformed = true; return }
                let size = Int(p[offset]) << 8 | Int(p[offset + 1])
                offset += 2
                guard size > 0, size <= p.count - offset else { malformed = true; return }
                let inner = p[offset] & 0x1F
                guard (1...23).contains(inner) else { malformed = true; return }
                if first { certainStart = inner == H264NALType.sps || inner == H264NALType.accessUnitDelimiter }
                if inner == H264NALType.idr || inner == H264NALType.sps { keyHint = true }
                first = false
                offset += size
            }
            guard !first else { malformed = true; return }
            startsFrame = true
        case H264NALType.fuA:
            guard p.count >= 3 else { malformed = true; return }
            let fu = p[1]
            let inner = fu & 0x1F
            guard fu & 0xC0 != 0xC0, (1...23).contains(inner) else { malformed = true; return }
            startsFrame = fu & 0x80 != 0
            certainStart = startsFrame && (inner == H264NALType.sps || inner == H264NALType.accessUnitDelimiter)
            keyHint = inner == H264NALType.idr
        default:
            malformed = true
        }
    }

    private mutating func classifyVP8(_ p: [UInt8]) {
        do {
            let (d, size) = try VP8PayloadDescriptor.parse(p)
            guard size < p.count else { malformed = true; return }
            startsFrame = d.startsFrame
            certainStart = d.startsFrame
            keyHint = d.startsFrame && p[size] & 0x01 == 0
        } catch {
            malformed = true
        }
    }
}
