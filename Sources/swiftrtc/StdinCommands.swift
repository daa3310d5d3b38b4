import Foundation
import Locks
import SwiftRTC

/// Standard input, read once on its own thread; each line goes to the first handler that takes
/// it (audio commands are tried before the camera's, which reports anything unknown).
enum StdinCommands {
    /// Returns false when the line is not for it.
    typealias Handler = @Sendable (_ words: [String], _ line: String) async -> Bool
    private static let handlers = Locked<(started: Bool, list: [Handler])>((false, []))

    static func add(first: Bool = false, _ handler: @escaping Handler) {
        let start = handlers.withLock { h -> Bool in
            if first { h.list.insert(handler, at: 0) } else { h.list.append(handler) }
            defer { h.started = true }
            return !h.started
        }
        guard start else { return }
        let lines = AsyncStream<String> { continuation in
            let thread = Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
            thread.name = "swiftrtc.stdin"
            thread.start()
        }
        Task {
            for await line in lines {
                let words = line.split(separator: " ").map(String.init)
                guard !words.isEmpty else { continue }
                for handler in handlers.withLock({ $0.list }) where await handler(words, line) { break }
            }
        }
    }
}
