import Dispatch
import Media
import Locks

/// Saves frames as PNG files: the first frame, or every `every`-th frame, plus the next frame
/// after each `snapshot()` call. If `path` contains `{n}` it is replaced by the frame's index
/// (from 0, six digits) so every save gets its own file; otherwise the file is overwritten.
/// Files are written atomically (temporary file, then rename).
///
/// Encoding runs on a background queue, one image at a time; a periodic save that comes due
/// while the previous one is still being written is skipped and counted (a `snapshot()` request
/// waits for the next frame instead).
public final class PNGSnapshotRenderer: VideoRenderer {
    public let path: String
    public let every: Int?

    private struct State {
        var frameIndex = 0
        var requested = false
        var busy = false
        var saved = 0
        var skipped = 0
        var lastPath: String?
        var error: MediaError?
    }
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "swiftrtc.render.png", qos: .utility)

    /// `every`: nil saves only the first frame; N saves frames 0, N, 2N, …
    public init(path: String, every: Int? = nil) {
        self.path = path
        self.every = every.map { max(1, $0) }
    }

    public func render(_ frame: VideoFrame) {
        let job = state.withLock { s -> (index: Int, isRequest: Bool)? in
            let index = s.frameIndex
            s.frameIndex += 1
            let periodic: Bool
            if let every { periodic = index % every == 0 } else { periodic = index == 0 }
            guard periodic || s.requested else { return nil }
            guard !s.busy else {
                if periodic { s.skipped += 1 }
                return nil
            }
            s.busy = true
            let isRequest = s.requested
            s.requested = false
            return (index, isRequest)
        }
        guard let job else { return }
        let target = fileName(for: job.index)
        queue.async { [weak self] in
            let png = PNGEncoder.encode(frame)
            let result = Result { () throws(MediaError) in try FileOutput.writeAtomically(png, to: target) }
            self?.state.withLock { s in
                s.busy = false
                switch result {
                case .success: s.saved += 1; s.lastPath = target
                case .failure(let e): s.error = e
                }
            }
        }
    }

    /// Saves the next frame that arrives (in addition to the periodic ones).
    public func snapshot() {
        state.withLock { $0.requested = true }
    }

    /// Blocks until the image being encoded (if any) is on disk.
    public func waitUntilIdle() {
        queue.sync {}
    }

    public var savedCount: Int { state.withLock { $0.saved } }
    /// Periodic saves skipped because the previous one was still being written.
    public var skippedCount: Int { state.withLock { $0.skipped } }
    public var lastSavedPath: String? { state.withLock { $0.lastPath } }
    /// The most recent write error, if any (later saves are still attempted).
    public var lastError: MediaError? { state.withLock { $0.error } }

    func fileName(for index: Int) -> String {
        guard path.contains("{n}") else { return path }
        let digits = String(index)
        let padded = String(repeating: "0", count: max(0, 6 - digits.count)) + digits
        return path.replacing("{n}", with: padded)
    }
}
