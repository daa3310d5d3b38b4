// Connect time on loopback: two SwiftRTC PeerConnections in this process, and two aiortc ones in
// a Python subprocess (bench/aiortc_connect.py), measured the same way: from createOffer until
// both sides report connectionState "connected" (ICE checks, DTLS handshake, SRTP keys).
import Foundation
import STUN
import Synchronization
import PeerConnection
import Transport

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Two connected PeerConnections; `close()` tears both down.
struct ConnectedPair: Sendable {
    let offerer: PeerConnection
    let answerer: PeerConnection
    /// createOffer → both connected.
    let connectMs: Double
    /// createOffer → the answer applied at the offerer (SDP, candidate gathering on both sides).
    let signalingMs: Double
    /// createOffer → ICE connected on both sides (the rest up to `connectMs` is DTLS).
    let iceMs: Double?

    func close() async {
        await offerer.close()
        await answerer.close()
    }
}

/// Host candidates on 127.0.0.1 only, no STUN server.
func loopbackConfiguration(answerer: Bool) -> PeerConnection.Configuration {
    var config = PeerConnection.Configuration()
    config.interfaceAddresses = SocketAddress(host: "127.0.0.1", port: 0).map { [$0] } ?? []
    // aiortc's answerer (bench/aiortc_connect.py) sends and receives on both m-lines too.
    if answerer { config.remoteTransceiverDirection = .sendrecv }
    return config
}

/// Offerer with one audio and one video sendrecv transceiver (as a browser call has, and as
/// the aiortc script does); the complete SDP (after gathering) is handed over in process.
/// Certificates are generated before the clock starts, as aiortc does in its constructor.
func connectPair(offererLoop: EventLoop, answererLoop: EventLoop, timeout: Duration = .seconds(15)) async throws -> ConnectedPair {
    let offerer = try PeerConnection(configuration: loopbackConfiguration(answerer: false), loop: offererLoop)
    let answerer = try PeerConnection(configuration: loopbackConfiguration(answerer: true), loop: answererLoop)
    let iceUp = IceTimes()
    offerer.delegate = iceUp
    answerer.delegate = iceUp
    do {
        try await offerer.addTransceiver(.audio)
        try await offerer.addTransceiver(.video)
        let started = ContinuousClock.now
        let offer = try await offerer.createOffer()
        try await offerer.setLocalDescription(offer)
        await offerer.waitForGatheringComplete(timeout: timeout)
        try await answerer.setRemoteDescription(offerer.localDescription ?? offer)
        let answer = try await answerer.createAnswer()
        try await answerer.setLocalDescription(answer)
        await answerer.waitForGatheringComplete(timeout: timeout)
        try await offerer.setRemoteDescription(answerer.localDescription ?? answer)
        let signalingMs = millisecondsSince(started)
        async let offererUp: Void = offerer.waitConnected(timeout: timeout)
        async let answererUp: Void = answerer.waitConnected(timeout: timeout)
        _ = try await (offererUp, answererUp)
        let connectMs = millisecondsSince(started)
        offerer.delegate = nil
        answerer.delegate = nil
        return ConnectedPair(offerer: offerer, answerer: answerer, connectMs: connectMs, signalingMs: signalingMs,
                             iceMs: iceUp.bothUp.map { milliseconds($0 - started) })
    } catch {
        await offerer.close()
        await answerer.close()
        throw error
    }
}

/// When each side's ICE first reached connected/completed (the delegate of both, called on
/// their loop threads).
final class IceTimes: PeerConnectionDelegate {
    private let times = Mutex<[ObjectIdentifier: ContinuousClock.Instant]>([:])

    func peerConnection(_ peerConnection: PeerConnection, didChange state: IceConnectionState) {
        guard state == .connected || state == .completed else { return }
        let now = ContinuousClock.now
        times.withLock { if $0[ObjectIdentifier(peerConnection)] == nil { $0[ObjectIdentifier(peerConnection)] = now } }
    }

    /// The later of the two, once both are up.
    var bothUp: ContinuousClock.Instant? {
        times.withLock { t in t.count == 2 ? t.values.max() : nil }
    }
}

/// `runs` Swift↔Swift connections, each pair on two fresh event loops (one thread per
/// PeerConnection), torn down before the next.
func swiftConnectTimes(runs: Int) async throws -> [(connect: Double, signaling: Double, ice: Double?)] {
    var times: [(connect: Double, signaling: Double, ice: Double?)] = []
    for i in 0..<runs {
        let loops = (try EventLoop(name: "bench-offerer-\(i)"), try EventLoop(name: "bench-answerer-\(i)"))
        defer {
            loops.0.shutdown()
            loops.1.shutdown()
        }
        let pair = try await connectPair(offererLoop: loops.0, answererLoop: loops.1)
        times.append((pair.connectMs, pair.signalingMs, pair.iceMs))
        await pair.close()
    }
    return times
}

/// Runs `python script --runs N` and parses `{"aiortc_connect_ms_median": …, "runs": […]}`.
func aiortcConnectTimes(python: String, script: String, runs: Int) throws -> [Double] {
    let object = try pythonJSON(python: python, script: script, arguments: ["--runs", String(runs)])
    guard let values = object["runs"] as? [Any] else { throw BenchError("\(script) printed no JSON with \"runs\"") }
    let times = values.compactMap { ($0 as? NSNumber)?.doubleValue }
    guard !times.isEmpty, times.count == values.count else { throw BenchError("\(script): \"runs\" is not a list of numbers") }
    return times
}

/// Runs `python script arguments…` and returns the JSON object on its last line of stdout.
func pythonJSON(python: String, script: String, arguments: [String]) throws -> [String: Any] {
    guard FileManager.default.isExecutableFile(atPath: python) else {
        throw BenchError("\(python) not found (run `make venv`)")
    }
    guard FileManager.default.fileExists(atPath: script) else { throw BenchError("\(script) not found") }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [script] + arguments
    let stdout = Pipe(), stderr = Pipe()
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    // Read before waiting so a chatty child cannot block on a full pipe.
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    let errors = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        let tail = String(decoding: errors.suffix(600), as: UTF8.self)
        throw BenchError("\(script) exited with \(process.terminationStatus): \(tail)")
    }
    // The JSON is the last line; aiortc or PyAV may print warnings before it.
    let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
    guard let last = lines.last,
          let object = try? JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any] else {
        throw BenchError("\(script) printed no JSON: \(String(decoding: output.prefix(300), as: UTF8.self))")
    }
    return object
}

func median(_ values: [Double]) -> Double? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

func millisecondsSince(_ start: ContinuousClock.Instant) -> Double {
    milliseconds(ContinuousClock.now - start)
}
