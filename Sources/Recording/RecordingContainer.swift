import Media

/// The container a recording is written in, chosen by the file name's extension.
public enum RecordingContainer: String, Sendable, CaseIterable {
    /// Fragmented MP4 (H.264 + Opus): a killed process leaves a file playable to its last
    /// fragment.
    case mp4
    /// Matroska: H.264 or VP8, with Opus.
    case mkv
    /// WebM: VP8 with Opus.
    case webm

    /// The container for `path`, or nil when the extension names none (a `.y4m` is raw frames,
    /// not a recording of the stream).
    public init?(path: String) {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        self.init(rawValue: path[path.index(after: dot)...].lowercased())
    }

    /// libavformat's muxer name.
    var formatName: String {
        switch self {
        case .mp4: "mp4"
        case .mkv: "matroska"
        case .webm: "webm"
        }
    }

    public func supports(_ codec: VideoCodecType) -> Bool {
        switch self {
        case .mp4: codec == .h264
        case .webm: codec == .vp8
        case .mkv: true
        }
    }

    /// Which container holds `codec`, for the error that says what to use instead.
    public static func suggestion(for codec: VideoCodecType) -> String {
        codec == .h264 ? ".mp4 or .mkv" : ".webm or .mkv"
    }
}
