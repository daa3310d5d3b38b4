import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private Xvfb server for one test: picks a free display number (from 97 up), waits until
/// the server says it is ready (`-displayfd`), and stops it on `stop()`.
///
/// Started with posix_spawn and an empty signal mask: Foundation's Process passes on the
/// spawning thread's mask, and test-runner threads block SIGTERM, so an Xvfb started that way
/// ignores `terminate()` and the test hangs waiting for it.
final class XvfbServer {
    let display: Int
    private let pid: pid_t
    private var running = true

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
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw XvfbError("pipe failed: errno \(errno)") }
        var keepReadEnd = false
        // The read end stays open while the server runs: Xvfb must not get EPIPE/SIGPIPE on stdout.
        defer { if !keepReadEnd { Glibc.close(fds[0]) } }

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t(), terminating = sigset_t()
        sigemptyset(&none)
        sigemptyset(&terminating)
        for sig in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&terminating, sig) }
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setsigdefault(&attr, &terminating)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        // -displayfd 1: Xvfb writes the display number to stdout once it accepts connections.
        let args = [exe, ":\(display)", "-screen", "0", screen, "-nolisten", "tcp", "-displayfd", "1"]
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, exe, &actions, &attr, &argv, environ)
        Glibc.close(fds[1])
        guard rc == 0 else { throw XvfbError("posix_spawn \(exe) failed: \(rc)") }
        let server = XvfbServer(display: display, pid: pid, stdoutPipe: fds[0])
        keepReadEnd = true

        // Wait for the ready line (EOF means the server gave up), at most 20 s.
        var pfd = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, 20_000) == 1 else {
            server.stop()
            throw XvfbError("Xvfb :\(display) did not become ready within 20 s")
        }
        var buf = [UInt8](repeating: 0, count: 32)
        let n = read(fds[0], &buf, buf.count)
        let reported = String(decoding: buf.prefix(max(0, n)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard reported == String(display) else {
            server.stop()
            return nil   // lost a race for this number: try the next
        }
        return server
    }

    private let stdoutPipe: Int32

    private init(display: Int, pid: pid_t, stdoutPipe: Int32) {
        self.display = display
        self.pid = pid
        self.stdoutPipe = stdoutPipe
    }

    /// SIGTERM (Xvfb removes its lock and socket), SIGKILL if it is still there after 5 s.
    /// Its exit is seen as the end of its stdout (the pipe's write end closes with it).
    func stop() {
        guard running else { return }
        running = false
        defer { Glibc.close(stdoutPipe) }
        kill(pid, SIGTERM)
        var hangUp = pollfd(fd: stdoutPipe, events: Int16(POLLIN), revents: 0)
        var sink = [UInt8](repeating: 0, count: 256)
        var exited = false
        while !exited, poll(&hangUp, 1, 5000) == 1 {
            exited = read(stdoutPipe, &sink, sink.count) <= 0
        }
        if !exited { kill(pid, SIGKILL) }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    deinit { stop() }
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
