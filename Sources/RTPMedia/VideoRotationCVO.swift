import Media
import RTP

/// The frame rotation as 3GPP's coordination-of-video-orientation byte carries it (R1 R0 =
/// quarter turns, clockwise as the receiver applies them; the same mapping libwebrtc uses).
extension VideoRotation {
    public init(_ rotation: VideoOrientation.Rotation) {
        switch rotation {
        case .degrees0: self = .r0
        case .degrees90: self = .r90
        case .degrees180: self = .r180
        case .degrees270: self = .r270
        }
    }

    public var orientationRotation: VideoOrientation.Rotation {
        switch self {
        case .r0: return .degrees0
        case .r90: return .degrees90
        case .r180: return .degrees180
        case .r270: return .degrees270
        }
    }

    /// The one-byte data of a urn:3gpp:video-orientation element (no flip, front camera bits).
    public var videoOrientationExtensionData: [UInt8] {
        RTPExtensionCodec.encodeVideoOrientation(VideoOrientation(rotation: orientationRotation))
    }

    /// The rotation in a urn:3gpp:video-orientation element; nil when the data is empty.
    public init?(videoOrientationExtensionData data: [UInt8]) {
        guard let o = RTPExtensionCodec.decodeVideoOrientation(data) else { return nil }
        self.init(o.rotation)
    }
}
