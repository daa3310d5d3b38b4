/// Length of the audio frames a capturer delivers (WebRTC works in 10 ms; Opus often in 20 ms).
public enum AudioFrameDuration: Int, Sendable, CaseIterable {
    case ms10 = 10
    case ms20 = 20

    /// Samples per channel in one frame at `sampleRate`.
    public func samples(atRate sampleRate: Int = 48000) -> Int { sampleRate / 1000 * rawValue }

    public var nanoseconds: Int64 { Int64(rawValue) * 1_000_000 }
}
