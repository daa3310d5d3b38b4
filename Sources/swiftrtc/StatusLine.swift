import Foundation
import SwiftRTC

/// The live status line: rewritten in place on a terminal, one line per second otherwise.
/// `say` prints a message (stdout) on a line of its own without garbling it; any thread.
final class StatusLine: @unchecked Sendable {
    // @unchecked: `lastLength` is behind `lock`.
    private let tty = isatty(STDERR_FILENO) != 0
    private let lock = NSLock()
    private var lastLength = 0

    func show(_ text: String) {
        lock.withLock {
            if tty {
                let padded = text.padding(toLength: max(text.count, lastLength), withPad: " ", startingAt: 0)
                FileHandle.standardError.write(Data(("\r" + padded).utf8))
                lastLength = text.count
            } else {
                FileHandle.standardError.write(Data((text + "\n").utf8))
            }
        }
    }

    func say(_ message: String) {
        lock.withLock {
            if tty && lastLength > 0 {
                FileHandle.standardError.write(Data(("\r" + String(repeating: " ", count: lastLength) + "\r").utf8))
                lastLength = 0
            }
            FileHandle.standardOutput.write(Data((message + "\n").utf8))
        }
    }

    func finish() {
        lock.withLock {
            if tty && lastLength > 0 { FileHandle.standardError.write(Data("\n".utf8)) }
        }
    }
}

/// Rates between two getStats snapshots of one RTP stream.
struct RateMeter {
    private var last: (time: Double, frames: Int, bytes: Int)?

    mutating func update(time: Double, frames: Int, bytes: Int) -> (fps: Double, kbps: Double) {
        defer { last = (time, frames, bytes) }
        // Counters that went back belong to a new connection (a reconnection): no rate yet.
        guard let last, time > last.time, frames >= last.frames, bytes >= last.bytes else { return (0, 0) }
        let dt = time - last.time
        return (Double(frames - last.frames) / dt, Double(bytes - last.bytes) * 8 / dt / 1000)
    }
}

func formatStatus(state: String, elapsed: Double, fps: Double, width: Int, height: Int, kbps: Double,
                  rtt: Double?, loss: Double?) -> String {
    let rttText = rtt.map { String(format: "%.0f ms", $0 * 1000) } ?? "-"
    let lossText = loss.map { String(format: "%.1f%%", $0 * 100) } ?? "-"
    return String(format: "%@  %5.1fs  %5.1f fps  %dx%d  %6.0f kbps  rtt %@  loss %@",
                  state, elapsed, fps, width, height, kbps, rttText, lossText)
}

/// Seconds on the monotonic clock.
func now() -> Double { MonotonicClock.seconds() }

/// Writes a JSON object to a file with a clear error.
func writeJSON(_ object: [String: Any], to path: String) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    do { try data.write(to: URL(fileURLWithPath: path)) } catch {
        throw UsageError("cannot write \(path): \(error.localizedDescription)")
    }
}

/// "1280x720" → (1280, 720).
func parseSize(_ text: String) -> (width: Int, height: Int)? {
    let parts = text.lowercased().split(separator: "x")
    guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (16...7680).contains(w), (16...4320).contains(h) else { return nil }
    return (w, h)
}

/// What a sender's status line adds: the encoder's target, why it is limited, NACKs answered.
func senderExtras(_ report: StatsReport) -> String {
    guard let out = report.ofType("outbound-rtp").first(where: { $0["kind"] == .string("video") }) else { return "" }
    var text = ""
    if let target = out.int("targetBitrate"), target > 0 { text += "  target \(target / 1000) kbps" }
    if case .string(let reason)? = out["qualityLimitationReason"], reason != "none" { text += " (\(reason))" }
    if let resent = out.int("retransmittedPacketsSent"), resent > 0 { text += "  rtx \(resent)" }
    // Simulcast: each layer's size and target (a layer the estimate switched off shows 0).
    let layers = report.ofType("outbound-rtp").filter { $0["kind"] == .string("video") && $0.string("rid") != nil }
        .sorted { ($0.int("frameWidth") ?? 0) < ($1.int("frameWidth") ?? 0) }
    if layers.count > 1 {
        text += "  layers " + layers.map { l in
            "\(l.string("rid") ?? "") \(l.int("frameWidth") ?? 0)x\(l.int("frameHeight") ?? 0) \((l.int("targetBitrate") ?? 0) / 1000)k"
        }.joined(separator: ", ")
    }
    return text
}

/// What a receiver's status line adds: NACKs sent and freezes seen (W3C definitions).
func receiverExtras(_ inbound: RTCStats?) -> String {
    guard let inbound else { return "" }
    var text = ""
    if let nacks = inbound.int("nackCount"), nacks > 0 { text += "  nack \(nacks)" }
    if let freezes = inbound.int("freezeCount"), freezes > 0 {
        text += String(format: "  freezes %d (%.1f s)", freezes, inbound.double("totalFreezesDuration") ?? 0)
    }
    return text
}

/// The status line of a player, from its stats: decode rate, size, kbps, ICE RTT, loss.
func playerStatus(_ report: StatsReport, state: String, elapsed: Double, meter: inout RateMeter) -> String {
    let inbound = report.ofType("inbound-rtp").first { $0["kind"] == .string("video") }
    let pair = report.ofType("candidate-pair").first { $0["state"] == .string("succeeded") }
    let rate = meter.update(time: now(), frames: inbound?.int("framesDecoded") ?? 0, bytes: inbound?.int("bytesReceived") ?? 0)
    let received = Double(inbound?.int("packetsReceived") ?? 0), lost = Double(inbound?.int("packetsLost") ?? 0)
    return formatStatus(state: state, elapsed: elapsed, fps: rate.fps,
                        width: inbound?.int("frameWidth") ?? 0, height: inbound?.int("frameHeight") ?? 0,
                        kbps: rate.kbps, rtt: pair?.double("currentRoundTripTime"),
                        loss: received + lost > 0 ? max(0, lost) / (received + lost) : nil) + receiverExtras(inbound)
}

/// `--token`, `--api` and `--insecure` (publish, play) as a streaming session's options.
func parseSessionOptions(_ a: inout Arguments) throws(UsageError) -> StreamingSession.Options {
    var options = StreamingSession.Options()
    options.token = try a.option("token")
    options.api = try a.option("api")
    options.insecure = a.flag("insecure")
    options.trickle = !a.flag("no-trickle")
    options.reconnect = try ReconnectOptions.parse(&a)
    let command = a.command
    options.onSignalingProblem = { printError("\(command): \($0)") }
    try IceOptions.parse(&a, command: a.command).apply(to: &options.configuration)
    return options
}

/// WHIP/WHEP flags shared by publish and play, for their usage text.
let whipUsage = """
  --no-trickle       WHIP/WHEP: gather every candidate before the POST instead of sending the
                     later ones by PATCH (trickle ICE, RFC 9725 §4.3; on by default)
  stdin restart-ice  WHIP/WHEP: restart ICE by PATCH (new credentials; DTLS and media go on)
\(ReconnectOptions.usage)
"""

/// stdin `restart-ice` (WHIP/WHEP sessions): an ICE restart by PATCH.
func startIceConsole(_ session: StreamingSession, url: String, command: String) {
    guard !url.hasPrefix("webrtc://") else { return }
    StdinCommands.add(first: true) { words, _ in
        guard words[0] == "restart-ice" else { return false }
        do {
            try await session.restartIce()
            say("\(command): ICE restarted")
        } catch {
            printError("\(command): \(error)")
        }
        return true
    }
}

/// The warning `--insecure` earns, once the command line is known to be valid.
func warnIfInsecure(_ options: StreamingSession.Options) {
    if options.insecure { printError("warning: --insecure: the server's certificate is not verified") }
}

/// A `--source` capturer: how to start and stop it (a camera's are async), and the camera when
/// it is one (for camera commands on stdin).
struct VideoCapture {
    let start: () async throws -> Void
    let stop: () async -> Void
    let camera: CameraCapturer?
}

/// `--source testsrc|file:PATH|camera[:ID]` as a capturer feeding `source`; a bad file fails here,
/// with its path and reason, before anything connects. `camera` holds the parsed camera flags.
func makeVideoCapturer(_ spec: String, camera: CameraOptions?, command: String, source: VideoSource,
                       width: Int, height: Int, fps: Double) throws -> VideoCapture {
    if spec == "testsrc" {
        let capturer = TestPatternCapturer(delegate: source)
        return VideoCapture(start: { try capturer.start(width: width, height: height, fps: fps) }, stop: { capturer.stop() }, camera: nil)
    }
    if spec.hasPrefix("file:") {
        let capturer = FileVideoCapturer(path: String(spec.dropFirst(5)), loop: true, delegate: source)
        _ = try capturer.frameRate()
        return VideoCapture(start: { try capturer.start() }, stop: { capturer.stop() }, camera: nil)
    }
    if let camera, CameraOptions.isCamera(spec) {
        let capturer = camera.makeCapturer(delegate: source, command: command)
        _ = try camera.pickDevice(capturer)   // a missing camera fails here, before anything connects
        return VideoCapture(start: {
            try await camera.start(capturer, width: width, height: height, fps: fps, command: command)
            CameraConsole.start(capturer, command: command)
        }, stop: { await capturer.stopCapture() }, camera: capturer)
    }
    throw UsageError("\(command): --source must be testsrc, file:PATH or camera[:ID], not \"\(spec)\"")
}
