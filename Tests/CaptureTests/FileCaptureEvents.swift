import Capture

/// The first event on a file capturer's `events`; nil if none comes within `timeout` (its
/// capture thread runs on real time).
func firstEvent(_ events: AsyncStream<FileCaptureEvent>, timeout: Duration = .seconds(20)) async -> FileCaptureEvent? {
    await withTaskGroup(of: FileCaptureEvent?.self) { group in
        group.addTask {
            for await event in events { return event }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// What is left on `events` once its capturer is gone (its deinit ends the stream).
func remainingEvents(_ events: AsyncStream<FileCaptureEvent>) async -> [FileCaptureEvent] {
    var rest: [FileCaptureEvent] = []
    for await event in events { rest.append(event) }
    return rest
}
