// swiftrtc-bench: speed and memory measurements reported as ratios against peers measured in the same run.
import Foundation

let usage = """
usage: swiftrtc-bench [--runs N] [--srtp-seconds S] [--json PATH] [--python PATH] [--aiortc-script PATH]
                      [--aiortc-publish-script PATH] [--swiftrtc PATH] [--pipeline-seconds S]
                      [--fanout N,N,…] [--fanout-window S] [--fanout-budget S] [--only PHASE,…]
                      [--server-url URL --server-pid PID]

Measures, in one run, and prints a table (name, value, unit, target, pass/FAIL):
  1. SRTP protect rates: libsrtp2's srtp_protect vs our OpenSSL backend, alone and followed by
     sendmmsg / GSO send on loopback (target: protect+send >= 0.8 x libsrtp2 protect)
  2. connect time (createOffer -> both connected) Swift<->Swift vs aiortc<->aiortc on 127.0.0.1,
     median of N runs each (target: swift/aiortc <= 0.5)
  3. resident memory per connected, idle PeerConnection (target: < 5 MB)
  4. media and codec micro-benchmarks at 720p: beauty filter (target <= 5 ms/frame), colour,
     scaling, conversion; H.264 and VP8 encode/decode (CPU ms per frame, one thread)
  5. publish pipeline CPU per frame at 1280x720@30, H.264 1.5 Mbps (test pattern -> processors ->
     encode -> packetize -> SRTP -> UDP to a non-decoding loopback peer), without and with the
     beauty filter, vs aiortc publishing the same pattern (target: swift/aiortc <= 0.5)
  6. capture->render latency p50/p99 through two loopback PeerConnections at 720p30
  7. relay (`swiftrtc serve` child): connectMs / firstFrameMs of `swiftrtc publish` / `play`
     (median of 3); fan-out of one 720p ~1.5 Mbps publisher to N non-decoding players: loss,
     relay CPU per forwarded packet, largest N under 1% loss within one core; vs a
     recv + sendmmsg forwarding floor measured in the same run
  8. camera at 720p: synthetic scene render (target <= 5 ms/frame), the capturer's per-frame
     NV12 -> I420 + mirror, MJPEG decode by our V4L2 path vs libavcodec's mjpeg decoder
     (target: ours/libavcodec <= 1.5); CPU ms per frame, one thread
  9. data channel throughput: one reliable ordered channel, 64 KiB messages, 200 MB on loopback
     (MB/s from the first send to the last byte received), Swift<->Swift vs aiortc<->aiortc vs
     Chromium<->Chromium (bench/datachannel_peers.py) (target: swift/chromium >= 1)
 10. audio send path per 10 ms frame vs aiortc's (bench/aiortc_audio.py)
 11. reconnect time after a 40 s outage of the publisher's path and after its address changes:
     p50/p95 over --reconnect-runs runs (bench/reconnect_bench.py: the relay behind interop/netem.py
     in a network namespace of its own; targets 3 s and 2 s; about 12 minutes for 10 runs: the
     product has no consent-timeout setting, so each outage really lasts 40 s)
 12. recording: the Recorder fed 10 s of a received 720p30 H.264 + Opus stream as RTP into a
     fragmented MP4, CPU per packet and per frame, vs forwarding the same packets to one receiver
     (the recv + sendmmsg floor) in the same run (target: <= 0.1)
Always exits 0 when the measurements ran: benchmarks report, they do not gate.
Child logs and stats files go to a temporary directory, removed at the end unless the
environment has SWIFTRTC_BENCH_KEEP set.

  --runs N             connect runs per implementation (default 7)
  --srtp-seconds S     CPU seconds per SRTP timing loop (default 2)
  --json PATH          where to write the rows (default artifacts/bench.json)
  --python PATH        Python with aiortc (default .venv/bin/python)
  --aiortc-script PATH (default bench/aiortc_connect.py)
  --aiortc-publish-script PATH (default bench/aiortc_publish.py)
  --swiftrtc PATH      the CLI the relay phase runs (default .build/release/swiftrtc)
  --pipeline-seconds S measured seconds per publish-pipeline and latency run (default 5)
  --fanout N,N,…       player counts, increasing (default 1,5,10,16,20,40,48,80,160,240,320,400,480);
                       CPU per forwarded packet, the floor and their ratio get a row each at 16, 48, 480
  --server-url URL     relay phase: measure this running SRS-compatible server (its HTTP API, e.g.
                       http://127.0.0.1:1985) instead of starting `swiftrtc serve`; needs --server-pid
  --server-pid PID     that server's process id (its CPU is read from /proc/PID/stat)
  --fanout-window S    seconds measured per player count (default 4)
  --fanout-budget S    wall seconds the fan-out steps may take in all (default 120)
  --reconnect-runs N   runs per reconnect scenario (default 10)
  --only PHASE,…       run only these of: srtp, connect, memory, media, pipeline, latency, relay,
                       camera, datachannel, audio, reconnect, recording
"""

struct Options {
    var runs = 7
    var srtpSeconds = 2.0
    var jsonPath = "artifacts/bench.json"
    var python = ".venv/bin/python"
    var aiortcScript = "bench/aiortc_connect.py"
    var aiortcPublishScript = "bench/aiortc_publish.py"
    var swiftrtc = ".build/release/swiftrtc"
    var pipelineSeconds = 5.0
    var fanout = [1, 5, 10, 16, 20, 40, 48, 80, 160, 240, 320, 400, 480]
    var fanoutWindow = 4.0
    var fanoutBudget = 120.0
    var only: Set<String>?
    var serverURL: String?
    var serverPID: Int32?
    var reconnectRuns = 10
    var server: (url: String, pid: Int32)? { serverURL.flatMap { url in serverPID.map { (url, $0) } } }

    func runs(_ phase: String) -> Bool { only?.contains(phase) ?? true }
}

let phases: Set<String> = ["srtp", "connect", "memory", "media", "pipeline", "latency", "relay", "camera", "datachannel", "audio",
                           "reconnect", "recording"]

func parseOptions(_ args: [String]) -> Options? {
    var options = Options()
    var i = 0
    func value() -> String? {
        i += 1
        return i < args.count ? args[i] : nil
    }
    while i < args.count {
        switch args[i] {
        case "--runs":
            guard let n = value().flatMap({ Int($0) }), (1...100).contains(n) else { return nil }
            options.runs = n
        case "--srtp-seconds":
            guard let s = value().flatMap({ Double($0) }), s > 0, s <= 60 else { return nil }
            options.srtpSeconds = s
        case "--json":
            guard let p = value() else { return nil }
            options.jsonPath = p
        case "--python":
            guard let p = value() else { return nil }
            options.python = p
        case "--aiortc-script":
            guard let p = value() else { return nil }
            options.aiortcScript = p
        case "--aiortc-publish-script":
            guard let p = value() else { return nil }
            options.aiortcPublishScript = p
        case "--swiftrtc":
            guard let p = value() else { return nil }
            options.swiftrtc = p
        case "--pipeline-seconds":
            guard let s = value().flatMap({ Double($0) }), s >= 1, s <= 60 else { return nil }
            options.pipelineSeconds = s
        case "--fanout":
            guard let list = value() else { return nil }
            let counts = list.split(separator: ",").compactMap { Int($0) }
            guard !counts.isEmpty, counts.count == list.split(separator: ",").count,
                  counts.allSatisfy({ (1...1000).contains($0) }), counts == counts.sorted() else { return nil }
            options.fanout = counts
        case "--fanout-window":
            guard let s = value().flatMap({ Double($0) }), s >= 1, s <= 60 else { return nil }
            options.fanoutWindow = s
        case "--fanout-budget":
            guard let s = value().flatMap({ Double($0) }), s >= 5, s <= 3600 else { return nil }
            options.fanoutBudget = s
        case "--only":
            guard let list = value() else { return nil }
            let names = Set(list.split(separator: ",").map(String.init))
            guard !names.isEmpty, names.isSubset(of: phases) else { return nil }
            options.only = names
        case "--server-url":
            guard let u = value(), u.hasPrefix("http://") || u.hasPrefix("https://") else { return nil }
            options.serverURL = u
        case "--reconnect-runs":
            guard let n = value().flatMap({ Int($0) }), (1...100).contains(n) else { return nil }
            options.reconnectRuns = n
        case "--server-pid":
            guard let n = value().flatMap({ Int32($0) }), n > 0 else { return nil }
            options.serverPID = n
        default:
            return nil
        }
        i += 1
    }
    guard (options.serverURL == nil) == (options.serverPID == nil) else { return nil }
    return options
}

func progress(_ text: String) {
    FileHandle.standardError.write(Data(("bench: " + text + "\n").utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
guard let options = parseOptions(arguments) else {
    FileHandle.standardError.write(Data(("swiftrtc-bench: bad arguments \(arguments)\n\n" + usage + "\n").utf8))
    exit(2)
}

let benchStarted = ContinuousClock.now
let loadAverage = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))
    .map { $0.split(separator: " ").prefix(3).joined(separator: " ") } ?? "?"
var rows: [Row] = []
var extra: [String: Any] = [:]

// 1. SRTP
if options.runs("srtp") {
progress("SRTP: \(options.srtpSeconds) CPU-s per loop, 9 loops")
let sendTargetNote = "protect + sendmmsg(32) to a loopback socket (kernel delivery paid by the sender), per CPU-second of one thread, vs libsrtp2 srtp_protect alone; 1200-byte RTP"
let gsoNote = "the same, sending each batch of 32 with one sendmsg that the kernel splits into 32 datagrams (UDP GSO)"
for r in srtpBenchmark(seconds: options.srtpSeconds) {
    let sendsRatio = r.name.hasPrefix("srtp.protect_send") && r.unit == "ratio"
    let note = !sendsRatio ? nil : r.name.contains("gso") ? gsoNote : sendTargetNote
    rows.append(Row(r.name, r.value, r.unit, target: sendsRatio ? .atLeast(0.8) : nil, note: note))
}
if !rows.contains(where: { $0.name.hasPrefix("srtp.") }) {
    rows.append(Row("srtp", nil, "ratio", target: .atLeast(0.8), note: "SRTP sessions could not be created"))
}
}

// 2. Connect time
if options.runs("connect") {
progress("connect: Swift<->Swift x \(options.runs)")
var swiftRuns: [(connect: Double, signaling: Double, ice: Double?)] = []
var swiftError: String?
do { swiftRuns = try await swiftConnectTimes(runs: options.runs) } catch { swiftError = "\(error)" }
let swiftTimes = swiftRuns.map(\.connect)
progress("connect: aiortc<->aiortc x \(options.runs) (\(options.python) \(options.aiortcScript))")
var aiortcTimes: [Double] = []
var aiortcError: String?
do {
    aiortcTimes = try aiortcConnectTimes(python: options.python, script: options.aiortcScript, runs: options.runs)
} catch { aiortcError = "\(error)" }
let swiftMedian = median(swiftTimes), aiortcMedian = median(aiortcTimes)
let connectNote = "createOffer -> connectionState connected on both sides (ICE + DTLS-SRTP), 127.0.0.1 only, audio+video sendrecv, complete SDP exchanged in process; median of \(options.runs); Swift: each PeerConnection on its own event loop; certificates made before the clock starts"
rows.append(Row("connect.swift_swift.median", swiftMedian, "ms", note: swiftError.map { "failed: \($0)" } ?? connectNote))
if swiftError == nil {
    rows.append(Row("connect.swift_swift.signaling_median", median(swiftRuns.map(\.signaling)), "ms",
                    note: "of which: createOffer -> answer applied at the offerer (SDP work and host-candidate gathering on both sides)"))
    rows.append(Row("connect.swift_swift.ice_median", median(swiftRuns.compactMap(\.ice)), "ms",
                    note: "of which: createOffer -> ICE connected on both sides; the rest up to connected is the DTLS handshake"))
}
rows.append(Row("connect.aiortc_aiortc.median", aiortcMedian, "ms", note: aiortcError.map { "failed: \($0)" }))
var connectRatio: Double?
if let s = swiftMedian, let a = aiortcMedian, a > 0 { connectRatio = s / a }
rows.append(Row("connect.swift_vs_aiortc", connectRatio, "ratio", target: .atMost(0.5)))
func rounded(_ values: [Double]) -> [Double] { values.map { ($0 * 100).rounded() / 100 } }
extra["connect_ms_runs"] = ["swift": rounded(swiftTimes), "aiortc": aiortcTimes,
                            "swift_signaling": rounded(swiftRuns.map(\.signaling)), "swift_ice": rounded(swiftRuns.compactMap(\.ice))]
}

// 3. Memory
if options.runs("memory") {
progress("memory: warm-up pair, then 1, 10 and 1 (own loops) connected pairs, each idle for 1 s")
do {
    let m = try await measureMemory()
    rows.append(Row("memory.rss_per_connected_pc", m.perPC, "MB", target: .below(5),
                    note: "(RSS with one pair connected and idle 1 s - RSS before) / 2, after a warm-up pair was connected and closed. Counted: each PeerConnection with its certificate, ICE/DTLS/SRTP state, socket and buffers. Not counted: its event-loop thread (both loops made before the baseline, as a server shares loops) and one-time init (OpenSSL, libsrtp, Swift runtime). malloc_trim(0) before each sample, so pages freed by the warm-up pair are neither reused unseen nor counted"))
    rows.append(Row("memory.rss_per_connected_pc.10_pairs", m.perPCTenPairs, "MB", target: .below(5),
                    note: "the same with ten pairs connected at once, / 20"))
    rows.append(Row("memory.rss_per_connected_pc.own_loop", m.perPCOwnLoop, "MB", target: .below(5),
                    note: "one pair again, each PeerConnection also bringing a new event loop (thread stack, malloc arena) made after the baseline"))
    extra["memory_baseline_rss_mb"] = (m.baselineMB * 10).rounded() / 10
} catch {
    rows.append(Row("memory.rss_per_connected_pc", nil, "MB", target: .below(5), note: "failed: \(error)"))
}
}

let media = await mediaPhases(options)
rows += media.rows
extra.merge(media.extra) { _, new in new }

// 8. Camera
if options.runs("camera") {
    progress("camera: synthetic scene, capturer frame path, MJPEG decode at 720p (median of 60 frames each)")
    rows += await cameraBenchmarks()
}

// 9. Data channels
if options.runs("datachannel") {
    progress("data channel: Swift<->Swift, 200 MB in 64 KiB messages, reliable ordered")
    var swift: Double?
    do {
        swift = try await swiftDataChannelThroughput(totalBytes: 200_000_000, messageSize: 65_536)
        rows.append(Row("datachannel.swift_swift.throughput", swift, "MB/s",
                        note: "data-only connection on 127.0.0.1, each PeerConnection on its own loop; at most 4 MiB queued by the sender"))
    } catch {
        rows.append(Row("datachannel.swift_swift.throughput", nil, "MB/s", note: "failed: \(error)"))
    }
    progress("data channel: aiortc<->aiortc and Chromium<->Chromium, the same way (\(options.python) bench/datachannel_peers.py)")
    var peers: [String: Any] = [:]
    var peersError: String?
    do { peers = try pythonJSON(python: options.python, script: "bench/datachannel_peers.py", arguments: []) } catch {
        peersError = "\(error)"
    }
    let errors = peers["errors"] as? [String: String] ?? [:]
    for (key, name) in [("aiortc", "aiortc_aiortc"), ("chromium", "chromium_chromium")] {
        let value = (peers["\(key)_mbps"] as? NSNumber)?.doubleValue
        rows.append(Row("datachannel.\(name).throughput", value, "MB/s",
                        note: value != nil ? "bench/datachannel_peers.py, the same message size, volume and flow control"
                                           : "failed: \(peersError ?? errors[key] ?? "no value")"))
        if key == "chromium", let swift, let value, value > 0 {
            rows.append(Row("datachannel.swift_vs_chromium", swift / value, "ratio", target: .atLeast(1)))
        }
    }
}

// 10. Audio
if options.runs("audio") {
    progress("audio: echo path (AEC+AGC+NS+HPF) + Opus per 10 ms frame, 3 CPU-s; aiortc's send path the same way (bench/aiortc_audio.py)")
    rows += await audioBenchmarks(python: options.python, aiortcScript: "bench/aiortc_audio.py")
}

// 11. Reconnect
if options.runs("reconnect") {
    progress("reconnect: 40 s outages and address changes, \(options.reconnectRuns) runs each (bench/reconnect_bench.py; ~12 min for 10)")
    rows += reconnectBenchmarks(python: options.python, swiftrtc: options.swiftrtc, runs: options.reconnectRuns)
}

// 12. Recording
if options.runs("recording") {
    progress("recording: 10 s of 720p30 H.264 + Opus RTP into a fragmented MP4, vs forwarding the same packets")
    rows += recordingBenchmarks()
}

let elapsed = millisecondsSince(benchStarted) / 1000
print(renderTable(rows, title: "swiftrtc-bench (load average at start: \(loadAverage); \(ProcessInfo.processInfo.activeProcessorCount) cores; \(String(format: "%.0f", elapsed)) s)"))

var document: [String: Any] = extra
document["rows"] = rowsJSON(rows)
document["load_average_at_start"] = loadAverage
document["cores"] = ProcessInfo.processInfo.activeProcessorCount
document["seconds"] = (elapsed * 10).rounded() / 10
document["date"] = ISO8601DateFormatter().string(from: Date())
document["passed"] = rows.filter { $0.passed == true }.count
document["failed"] = rows.filter { $0.passed == false }.map(\.name)
do {
    try writeJSON(document, to: options.jsonPath)
    print("\nwrote \(options.jsonPath)")
} catch {
    FileHandle.standardError.write(Data("swiftrtc-bench: cannot write \(options.jsonPath): \(error)\n".utf8))
}
if ProcessInfo.processInfo.environment["SWIFTRTC_BENCH_KEEP"] == nil {
    try? FileManager.default.removeItem(atPath: benchTempDirectory)   // child logs, stats files, the clip
} else {
    print("kept \(benchTempDirectory) (SWIFTRTC_BENCH_KEEP)")
}
exit(0)
