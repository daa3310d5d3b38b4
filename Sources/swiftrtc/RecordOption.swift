import Foundation
import SwiftRTC

/// `--record PATH`: the format from the extension. `.mp4`, `.webm`, `.mkv` record the stream as
/// it was sent (no re-encoding, with audio, `Recorder`); `.y4m` writes the decoded frames raw,
/// for debugging.
enum RecordOption {
    static let usage = "--record PATH  .mp4 (H.264), .webm (VP8), .mkv (either): the stream with its audio, not re-encoded; .y4m: decoded frames, raw"

    static func open(_ path: String?) throws -> (Y4MFileRenderer?, Recorder?) {
        guard let path else { return (nil, nil) }
        if path.lowercased().hasSuffix(".y4m") { return (Y4MFileRenderer(path: path), nil) }
        guard RecordingContainer(path: path) != nil else {
            throw UsageError("--record \(path): the name must end in .mp4, .webm, .mkv or .y4m")
        }
        // Fail now, not after connecting, when the file cannot be made (it is created with the
        // first keyframe, so a run that records nothing leaves no empty file).
        let directory = (path as NSString).deletingLastPathComponent
        guard access(directory.isEmpty ? "." : directory, W_OK) == 0 else {
            throw UsageError("--record \(path): cannot write in \(directory.isEmpty ? "." : directory)")
        }
        let recorder = try Recorder(path: path)
        recorder.onError = { message in say("record: \(message); the stream goes on without recording") }
        return (nil, recorder)
    }

    static func finish(_ recorder: Recorder) {
        let s = recorder.close()
        if !s.started && s.error == nil { say("record: nothing was recorded to \(recorder.path) (no keyframe arrived)") }
    }

    static func describe(_ recorder: Recorder) -> String {
        let s = recorder.statistics
        return "\(s.videoFrames) frames and \(s.audioPackets) audio packets (\(String(format: "%.1f", s.duration)) s) recorded to \(recorder.path)"
            + (s.error.map { " (stopped: \($0))" } ?? "")
    }

    static func json(_ recorder: Recorder) -> [String: Any] {
        let s = recorder.statistics
        return ["path": recorder.path, "videoFrames": s.videoFrames, "audioPackets": s.audioPackets, "durationSeconds": s.duration,
                "bytes": s.bytes, "width": s.width, "height": s.height, "dropped": s.dropped, "error": s.error ?? NSNull()]
    }
}
