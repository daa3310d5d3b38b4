import Foundation

/// A private Xvfb server for one test: picks a free display number (from 97 up), waits until
/// the server says it is ready (`-displayfd`), and kills it on `stop()`.
final class XvfbServer {
    let display: Int
    private let process: Process

    var displayName: String { ":\(display)" }

    static var executable: String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        return (paths + ["/usr/bin"]).map { $0 + "/Xvfb" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func start(screen: String = "1280x720x24") throws -> XvfbServer {
        guard let exe = executable else { throw XvfbError("Xvfb is not installed (Debian package xvfb)") }
        for n in 97..<140 {
            // A lock file or socket means another server owns (or owned) that number.
            if FileManager.default.fileExists(atPath: "/tmp/.X\(n)-lock")
                || FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(n)") { continue }
            if let server = try launch(exe, display: n, screen: screen) { return server }
        }
        throw XvfbError("no free X display number in 97..<140")
    }

    private static func launch(_ exe: String, display: Int, screen: String) throws -> XvfbServer? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        // -displayfd 1: Xvfb writes the display number to stdout once it accepts connections.
        p.arguments = [":\(display)", "-screen", "0", screen, "-nolisten", "tcp", "-displayfd", "1"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        // Wait for the ready line (or EOF if the server gave up), at most 20 s.
        let ready = DispatchSemaphore(value: 0)
        let line = LineBox()
        Thread.detachNewThread {
            line.value = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            ready.signal()
        }
        if ready.wait(timeout: .now() + 20) == .timedOut {
            p.terminate()
            p.waitUntilExit()
            throw XvfbError("Xvfb :\(display) did not become ready within 20 s")
        }
        let reported = line.value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard p.isRunning, reported == String(display) else {
            if p.isRunning { p.terminate() }
            p.waitUntilExit()
            return nil   // lost a race for this number: try the next
        }
        return XvfbServer(display: display, process: p)
    }

    private init(display: Int, process: Process) {
        self.display = display
        self.process = process
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

private final class LineBox: @unchecked Sendable {
    // @unchecked: written by the reader thread before it signals, read after the wait.
    var value = ""
}

struct XvfbError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Runs a shell pipeline; returns its exit status and standard error.
func runShell(_ command: String) throws -> (status: Int32, stderr: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/sh")
    p.arguments = ["-c", command]
    let err = Pipe()
    p.standardError = err
    p.standardOutput = FileHandle.nullDevice
    try p.run()
    let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    return (p.terminationStatus, text)
}

/// /work/main/artifacts/render (the repository's artifacts directory, found from this file's
/// real path so it works from a scratch package with symlinked test sources too).
func artifactsDirectory() throws -> String {
    let env = ProcessInfo.processInfo.environment
    let dir: String
    if let root = env["ARTIFACTS_DIR"], !root.isEmpty {
        dir = root + "/render"
    } else {
        let file = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        let repo = file.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        dir = repo.path + "/artifacts/render"
    }
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}
