// A child process whose stdout lines are collected by a reader thread (so a chatty child never
// blocks on a full pipe), stderr going to a log file, stdin writable; waits are bounded.
import Foundation
import Glibc
import Synchronization

final class ChildProcess: @unchecked Sendable {
    // @unchecked: `process` and the pipes are set in init and only read afterwards; the line
    // buffer is behind a Mutex.
    let process: Process
    let logPath: String
    private let stdinPipe = Pipe()
    private let stdoutPipe = Pipe()
    private let lines = LineBuffer()

    init(_ executable: String, _ arguments: [String], logPath: String) throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else { throw BenchError("\(executable) not found") }
        self.logPath = logPath
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: logPath) ?? FileHandle.nullDevice
        try process.run()
        let fd = stdoutPipe.fileHandleForReading.fileDescriptor
        let thread = Thread { [lines] in
            var pending = [UInt8]()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                pending += buffer[0..<n]
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    lines.value.withLock { $0.all.append(line) }
                }
            }
            let rest = String(decoding: pending, as: UTF8.self)
            lines.value.withLock {
                if !rest.isEmpty { $0.all.append(rest) }
                $0.eof = true
            }
        }
        thread.start()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// The first stdout line (from the start) that parses as a JSON object containing `key`;
    /// nil after `timeout` or once the child closed stdout without printing one.
    func jsonLine(withKey key: String, timeout: Duration) async -> [String: Any]? {
        let end = ContinuousClock.now.advanced(by: timeout)
        while true {
            let (all, eof) = lines.value.withLock { ($0.all, $0.eof) }
            for line in all where line.hasPrefix("{") {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object[key] != nil {
                    return object
                }
            }
            if eof || ContinuousClock.now >= end { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    func writeLine(_ text: String) {
        stdinPipe.fileHandleForWriting.write(Data((text + "\n").utf8))
    }

    /// SIGINT (the CLI's graceful stop), then waits up to `timeout`, then SIGKILL.
    func stop(signal: Int32 = SIGINT, timeout: Duration = .seconds(5)) async {
        if process.isRunning { kill(pid, signal) }
        _ = await waitForExit(timeout: timeout)
        if process.isRunning {
            kill(pid, SIGKILL)
            _ = await waitForExit(timeout: .seconds(2))
        }
    }

    /// The exit status, or nil if still running after `timeout`.
    func waitForExit(timeout: Duration) async -> Int32? {
        let end = ContinuousClock.now.advanced(by: timeout)
        while process.isRunning && ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(20)) }
        return process.isRunning ? nil : process.terminationStatus
    }

    /// The last `count` bytes of the child's stderr log.
    func logTail(_ count: Int = 600) -> String {
        guard let data = FileManager.default.contents(atPath: logPath) else { return "" }
        return String(decoding: data.suffix(count), as: UTF8.self)
    }
}

/// A scratch directory for this run's logs and stats files.
let benchTempDirectory: String = {
    let path = NSTemporaryDirectory() + "swiftrtc-bench-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()

/// Lines read so far and whether the child closed stdout (shared with the reader thread).
private final class LineBuffer: Sendable {
    let value = Mutex<(all: [String], eof: Bool)>(([], false))
}
