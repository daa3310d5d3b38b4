import Media

/// What a file capturer (`FileVideoCapturer`, `WAVFileCapturer`) reports besides its frames, on
/// its `events` stream.
public enum FileCaptureEvent: Sendable, Equatable {
    /// A file that does not loop delivered its last frame; delivery stopped.
    case ended
    /// Reading or decoding failed mid-file; delivery stopped.
    case failed(MediaError)
}
