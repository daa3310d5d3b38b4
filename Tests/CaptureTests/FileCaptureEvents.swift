import Capture
import TestSupport

/// The first event on a file capturer's `events`; nil if none comes within `timeout` (its
/// capture thread runs on real time).
func firstEvent(_ events: AsyncStream<FileCaptureEvent>, timeout: Duration = .seconds(20)) async -> FileCaptureEvent? {
    await withDeadline(timeout) {
        for await event in events { return event }
        return nil
    }
}

/// What is left on `events` once its capturer is gone (its deinit ends the stream).
func remainingEvents(_ events: AsyncStream<FileCaptureEvent>) async -> [FileCaptureEvent] {
    var rest: [FileCaptureEvent] = []
    for await event in events { rest.append(event) }
    return rest
}
