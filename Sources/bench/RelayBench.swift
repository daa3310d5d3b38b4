// The relay under fan-out: `swiftrtc serve` as a child process (so its CPU is its own, read from
// /proc/PID/stat), one `swiftrtc publish` child sending the test pattern at 1280x720@30 ~1.5 Mbps,
// and N players in this process that do not decode (PeerConnections with mediaPipeline off,
// counting RTP and sequence gaps). For each N: loss at the players and the relay's CPU over a
// window. Before the fan-out, `swiftrtc publish` / `swiftrtc play` runs against the relay give
// connectMs and firstFrameMs as the CLI reports them (--stats-json).
import Foundation
import Media
import Glibc
import HTTP
import PeerConnection
import RTP
import STUN
import Synchronization
import Transport

/// RTP a player received on its video m-line: count and highest extended sequence number.
final class PlayerCounter: Sendable {
    private let state = Mutex<(received: Int, highest: Int64?, unwrapper: SequenceNumberUnwrapper)>((0, nil, SequenceNumberUnwrapper()))

    func record(_ packet: RTPPacket) {
        state.withLock { s in
            let seq = s.unwrapper.unwrap(packet.sequenceNumber)
            s.received += 1
            if s.highest.map({ seq > $0 }) ?? true { s.highest = seq }
        }
    }

    var snapshot: (received: Int, highest: Int64?) { state.withLock { ($0.received, $0.highest) } }
}

/// A player that only receives: SRTP is removed and packets are counted, nothing is decoded.
struct BenchPlayer: Sendable {
    let pc: PeerConnection
    let counter: PlayerCounter

    static func connect(url: String, api: RelayAPI, loop: EventLoop) async throws -> BenchPlayer {
        var config = loopbackConfiguration(answerer: false)
        config.mediaPipeline = false
        let pc = try PeerConnection(configuration: config, loop: loop)
        let counter = PlayerCounter()
        do {
            try await pc.addTransceiver(.audio, TransceiverInit(direction: .recvonly))
            let video = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
            video.receiver.onRTP = { counter.record($0) }
            try await pc.setLocalDescription(try await pc.createOffer())
            await pc.waitForGatheringComplete(timeout: .seconds(5))
            guard let offer = pc.localDescription?.sdp else { throw BenchError("player has no offer") }
            let answer = try await api.exchange(.play, streamURL: url, offer: offer)
            try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: answer))
            try await pc.waitConnected(timeout: .seconds(15))
            return BenchPlayer(pc: pc, counter: counter)
        } catch {
            await pc.close()
            throw error
        }
    }
}

struct FanoutStep {
    var players: Int
    var seconds: Double
    var inboundPPS: Double
    var relaySent: Int
    var expected: Int
    var received: Int
    var relayCores: Double
    /// The relay's user time alone: its own code, without the kernel's sends.
    var relayUserCores: Double
    var benchCores: Double
    var joinSeconds: Double
    /// System-wide UDP receive-buffer drops during the window (nil where /proc/net/snmp is unreadable).
    var udpReceiveBufferDrops: Int?
    var loss: Double { expected > 0 ? max(0, Double(expected - received)) / Double(expected) : 1 }
    var lossVsRelaySent: Double { relaySent > 0 ? max(0, Double(relaySent - received)) / Double(relaySent) : 1 }
    /// Packets a second each player was sent (with simulcast: one layer's, not the inbound rate).
    var forwardedPPSPerPlayer: Double { players > 0 && seconds > 0 ? Double(relaySent) / Double(players) / seconds : 0 }
    var relayCPUPerPacketUs: Double? { relaySent > 0 ? relayCores * seconds * 1e6 / Double(relaySent) : nil }
    var relayUserCPUPerPacketUs: Double? { relaySent > 0 ? relayUserCores * seconds * 1e6 / Double(relaySent) : nil }
    var passed: Bool { loss < 0.01 && relayCores <= 1.0 }

    var json: [String: Any] {
        ["players": players, "seconds": (seconds * 100).rounded() / 100, "inbound_pps": inboundPPS.rounded(),
         "relay_sent": relaySent, "forwarded_pps_per_player": forwardedPPSPerPlayer.rounded(), "expected": expected, "received": received,
         "loss": (loss * 1e5).rounded() / 1e5, "loss_vs_relay_sent": (lossVsRelaySent * 1e5).rounded() / 1e5,
         "relay_cores": (relayCores * 1000).rounded() / 1000, "join_seconds": (joinSeconds * 10).rounded() / 10,
         "udp_rcvbuf_drops_system_wide": udpReceiveBufferDrops.map { $0 as Any } ?? NSNull(), "bench_process_cores": (benchCores * 1000).rounded() / 1000,
         "relay_cpu_us_per_forwarded_packet": relayCPUPerPacketUs.map { ($0 * 100).rounded() / 100 } ?? NSNull(),
         "relay_user_cpu_us_per_forwarded_packet": relayUserCPUPerPacketUs.map { ($0 * 100).rounded() / 100 } ?? NSNull()]
    }
}

struct RelayBenchResult {
    var publishConnectMs: [Double] = []
    var playConnectMs: [Double] = []
    var playFirstFrameMs: [Double] = []
    var steps: [FanoutStep] = []
    var publisherKbps: Double?
    var notes: [String] = []
}

/// The server's HTTP API: our relay on 127.0.0.1, or any SRS-compatible server (`--server-url`).
struct RelayAPI {
    /// scheme://host:port, no trailing slash.
    let base: String
    init(port: UInt16) { base = "http://127.0.0.1:\(port)" }
    init(base: String) { self.base = base.hasSuffix("/") ? String(base.dropLast()) : base }
    /// host:port of `base`, for webrtc:// stream URLs (whose API is then at that port).
    var authority: String {
        let rest = base.split(separator: "/", omittingEmptySubsequences: true)
        return rest.count >= 2 ? String(rest[1]) : base
    }

    func get(_ path: String) async -> [String: Any]? {
        guard let r = try? await HTTPClient(timeout: .seconds(3)).send(method: "GET", url: base + path), r.status == 200 else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any]
    }

    enum Action: String { case publish, play }

    /// SRS's JSON API, as `swiftrtc play` speaks it: POST {api, tid, streamurl, sdp, clientip},
    /// reply {code: 0, sdp}. Returns the answer SDP.
    func exchange(_ action: Action, streamURL: String, offer: String) async throws -> String {
        let url = base + "/rtc/v1/\(action.rawValue)/"
        let body: [String: Any] = ["api": url, "tid": String(UInt32.random(in: 0...UInt32.max), radix: 36),
                                   "streamurl": streamURL, "sdp": offer, "clientip": "127.0.0.1"]
        let request = try JSONSerialization.data(withJSONObject: body)
        let response = try await HTTPClient(timeout: .seconds(10)).send(method: "POST", url: url, headers: ["Content-Type": "application/json"],
                                                                        body: Array(request))
        guard response.status == 200,
              let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
              (object["code"] as? NSNumber)?.intValue == 0, let sdp = object["sdp"] as? String else {
            throw BenchError("\(url) refused \(action.rawValue): HTTP \(response.status) \(String(decoding: response.body.prefix(200), as: UTF8.self))")
        }
        return sdp
    }

    /// (packets in, packets out, publisher active) of stream `name`.
    func stream(_ name: String) async -> (packetsIn: Int, packetsOut: Int, active: Bool, kbps: Double)? {
        guard let streams = await get("/api/v1/streams/")?["streams"] as? [[String: Any]],
              let s = streams.first(where: { ($0["name"] as? String) == name }) else { return nil }
        // SRS lists no packet counts (its streams have frames and bytes): 0, and the caller
        // counts what the players received instead.
        let packets = s["packets"] as? [String: Any]
        let number = { (v: Any?) in (v as? NSNumber)?.doubleValue ?? 0 }
        return (Int(number(packets?["in"])), Int(number(packets?["out"])),
                ((s["publish"] as? [String: Any])?["active"] as? Bool) ?? false,
                number((s["kbps"] as? [String: Any])?["recv_30s"]))
    }
}

/// Runs `swiftrtc ARGS --stats-json PATH` to completion and returns the stats JSON.
private func runCLI(_ swiftrtc: String, _ args: [String], name: String, timeout: Duration = .seconds(40)) async throws -> [String: Any] {
    let statsPath = benchTempDirectory + "/\(name).json"
    try? FileManager.default.removeItem(atPath: statsPath)
    let child = try ChildProcess(swiftrtc, args + ["--stats-json", statsPath], logPath: benchTempDirectory + "/\(name).log")
    guard let status = await child.waitForExit(timeout: timeout) else {
        await child.stop()
        throw BenchError("swiftrtc \(args.first ?? "") did not finish in \(timeout): \(child.logTail(300))")
    }
    guard status == 0, let data = FileManager.default.contents(atPath: statsPath),
          let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw BenchError("swiftrtc \(args.first ?? "") exited with \(status): \(child.logTail(300))")
    }
    return object
}

/// Player counts whose CPU per forwarded packet, floor and ratio are rows of their own.
let relayReportedPlayerCounts: Set<Int> = [16, 48, 480]

/// The whole relay phase. `series` is the increasing list of player counts; `budget` bounds the
/// fan-out steps' total wall time (a step is not started once it is spent).
/// `server`: measure that already running SRS-compatible server (API base URL, its pid for the
/// CPU) instead of a `swiftrtc serve` child.
/// `simulcast`: the publisher sends three layers (`--simulcast`, 1, 1/2, 1/4); each player is
/// sent one layer (the largest, on an unlimited loopback). `runs` 0 skips the connect runs.
func relayBenchmark(swiftrtc: String, series: [Int], window: Double, budget: Double, runs: Int = 3,
                    server: (url: String, pid: Int32)? = nil, simulcast: Bool = false) async throws -> RelayBenchResult {
    let relay: ChildProcess?
    let api: RelayAPI
    let relayPID: Int32
    if let server {
        relay = nil
        api = RelayAPI(base: server.url)
        relayPID = server.pid
    } else {
        guard let httpPort = freeLoopbackPort(Int32(SOCK_STREAM.rawValue)), let udpPort = freeLoopbackPort(Int32(SOCK_DGRAM.rawValue)) else {
            throw BenchError("no free loopback ports")
        }
        let child = try ChildProcess(swiftrtc, ["serve", "--http", "127.0.0.1:\(httpPort)", "--udp", "127.0.0.1:\(udpPort)"],
                                     logPath: benchTempDirectory + "/relay.log")
        relay = child
        api = RelayAPI(port: httpPort)
        relayPID = child.pid
    }
    func relayLog() -> String { relay?.logTail() ?? "(external server at \(api.base), pid \(relayPID))" }
    var publisher: ChildProcess?
    var players: [BenchPlayer] = []
    let loops = [try EventLoop(name: "bench-players-0"), try EventLoop(name: "bench-players-1")]
    var result = RelayBenchResult()
    func tearDown() async {
        for p in players { await p.pc.close() }
        players = []
        for l in loops { l.shutdown() }
        await publisher?.stop()
        await relay?.stop()
    }
    do {
        var up = false
        for _ in 0..<300 {
            up = await api.get("/api/v1/versions/") != nil
            if up || !(relay?.isRunning ?? true) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard up else { throw BenchError("the server did not answer on \(api.base): \(relayLog())") }
        let host = "webrtc://\(api.authority)/live"

        // connectMs of publish (default options: test pattern 720p30 H.264 + tone), median of `runs`.
        if runs > 0 { progress("relay: swiftrtc publish x \(runs) (connectMs)") }
        for i in 0..<runs {
            let stats = try await runCLI(swiftrtc, ["publish", "\(host)/connect\(i)", "--duration", "1"], name: "publish-\(i)")
            if let ms = (stats["connectMs"] as? NSNumber)?.doubleValue { result.publishConnectMs.append(ms) }
        }

        // The fan-out publisher: video only, 720p30 from a busy clip, capped at 1.5 Mbps.
        let clip = benchTempDirectory + "/busy-720p.y4m"
        try writeBusyY4M(path: clip)
        defer { try? FileManager.default.removeItem(atPath: clip) }
        let pub = try ChildProcess(swiftrtc, ["publish", "\(host)/bench", "--source", "file:\(clip)", "--bitrate", "1500", "--audio", "none",
                                              "--stats-json", benchTempDirectory + "/publisher.json"] + (simulcast ? ["--simulcast"] : []),
                                   logPath: benchTempDirectory + "/publisher.log")
        publisher = pub
        var flowing = false
        var firstIn: Int?
        for _ in 0..<150 {
            if flowing || !pub.isRunning { break }
            try await Task.sleep(for: .milliseconds(100))
            if let s = await api.stream("bench"), s.active {
                if let f = firstIn, s.packetsIn > f + 30 { flowing = true }
                if server != nil {   // no packet counts to watch: give the media two seconds
                    try await Task.sleep(for: .seconds(2))
                    flowing = true
                }
                if firstIn == nil { firstIn = s.packetsIn }
            }
        }
        guard flowing else { throw BenchError("the publisher's media did not reach the relay: \(pub.logTail())") }

        if runs > 0 { progress("relay: swiftrtc play x \(runs) (connectMs, firstFrameMs)") }
        for i in 0..<runs {
            let stats = try await runCLI(swiftrtc, ["play", "\(host)/bench", "--duration", "1"], name: "play-\(i)")
            if let ms = (stats["connectMs"] as? NSNumber)?.doubleValue { result.playConnectMs.append(ms) }
            if let ms = (stats["firstFrameMs"] as? NSNumber)?.doubleValue { result.playFirstFrameMs.append(ms) }
        }

        // Fan-out. A player that cannot connect, or the budget running out, ends the series
        // with a note; the steps measured so far stand.
        let started = MonotonicClock.seconds()
        for n in series {
            if result.steps.contains(where: { !$0.passed }), !relayReportedPlayerCounts.contains(n) { continue }
            if MonotonicClock.seconds() - started > budget {
                result.notes.append("stopped before \(n) players: the fan-out time budget (\(Int(budget)) s) was spent")
                break
            }
            let joinStarted = MonotonicClock.seconds()
            var stop: String?
            while players.count < n && stop == nil {
                if MonotonicClock.seconds() - started > budget {
                    stop = "stopped at \(n) players: the fan-out time budget (\(Int(budget)) s) ran out while connecting them (\(players.count) connected)"
                    break
                }
                let batch = min(10, n - players.count)
                let base = players.count
                let joined = await withTaskGroup(of: Result<BenchPlayer, any Error>.self) { group in
                    for i in 0..<batch {
                        let loop = loops[(base + i) % loops.count]
                        group.addTask {
                            do { return .success(try await BenchPlayer.connect(url: "\(host)/bench", api: api, loop: loop)) } catch { return .failure(error) }
                        }
                    }
                    var all: [Result<BenchPlayer, any Error>] = []
                    for await p in group { all.append(p) }
                    return all
                }
                for r in joined { if case .success(let p) = r { players.append(p) } }
                for r in joined {
                    if case .failure(let e) = r, stop == nil { stop = "stopped at \(n) players: player \(players.count + 1) could not connect (\(e))" }
                }
            }
            if let stop {
                result.notes.append(stop)
                progress("relay: " + stop)
                break
            }
            let joinSeconds = MonotonicClock.seconds() - joinStarted
            try await Task.sleep(for: .milliseconds(1500))   // join keyframes, settle
            guard let s0 = await api.stream("bench"), let cpu0 = processCPUTimes(pid: relayPID) else {
                throw BenchError("relay stats unavailable: \(relayLog())")
            }
            let snap0 = players.map(\.counter.snapshot)
            let bench0 = processCPUSeconds(), wall0 = MonotonicClock.seconds(), drops0 = udpReceiveBufferErrors()
            try await Task.sleep(for: .seconds(window))
            guard let s1 = await api.stream("bench"), let cpu1 = processCPUTimes(pid: relayPID) else {
                throw BenchError("relay stats unavailable: \(relayLog())")
            }
            let snap1 = players.map(\.counter.snapshot)
            let bench1 = processCPUSeconds(), wall1 = MonotonicClock.seconds(), drops1 = udpReceiveBufferErrors()
            var expected = 0, received = 0
            for (a, b) in zip(snap0, snap1) {
                received += b.received - a.received
                if let h0 = a.highest, let h1 = b.highest { expected += Int(h1 - h0) } else { expected += b.received - a.received }
            }
            let wall = wall1 - wall0
            // A server without packet counts (SRS): what the players received stands for what it sent.
            let counted = s1.packetsOut > s0.packetsOut
            let step = FanoutStep(players: n, seconds: wall,
                                  inboundPPS: counted ? Double(s1.packetsIn - s0.packetsIn) / wall : Double(expected) / Double(n) / wall,
                                  relaySent: counted ? s1.packetsOut - s0.packetsOut : received, expected: expected, received: received,
                                  relayCores: (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / wall,
                                  relayUserCores: (cpu1.user - cpu0.user) / wall, benchCores: (bench1 - bench0) / wall, joinSeconds: joinSeconds,
                                  udpReceiveBufferDrops: drops0.flatMap { d0 in drops1.map { $0 - d0 } })
            result.steps.append(step)
            result.publisherKbps = s1.kbps
            progress(String(format: "relay: %3d players (joined in %.1f s): loss %.3f%%, relay %.2f cores, %.1f us CPU per forwarded packet (user %.2f), %.0f packets/s in, bench process %.2f cores",
                            n, joinSeconds, step.loss * 100, step.relayCores, step.relayCPUPerPacketUs ?? 0,
                            step.relayUserCPUPerPacketUs ?? 0, step.inboundPPS, step.benchCores))
            // Past the first failing N only the counts the report names are still measured
            // (their CPU per forwarded packet is wanted even when loss went over 1%).
            if !step.passed || result.steps.contains(where: { !$0.passed }) {
                guard series.contains(where: { $0 > n && relayReportedPlayerCounts.contains($0) }) else { break }
            }
        }
    } catch {
        await tearDown()
        throw error
    }
    await tearDown()
    return result
}
