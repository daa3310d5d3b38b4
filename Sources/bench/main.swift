// swiftrtc-bench: speed and memory measurements reported as ratios against peers measured in the same run.
import Foundation

let usage = """
usage: swiftrtc-bench [--runs N] [--srtp-seconds S] [--json PATH] [--python PATH] [--aiortc-script PATH]

Measures, in one run, and prints a table (name, value, unit, target, pass/FAIL):
  1. SRTP protect rates: libsrtp2's srtp_protect vs our OpenSSL backend, alone and followed by
     sendmmsg / GSO send on loopback (target: protect+send >= 0.8 x libsrtp2 protect)
  2. connect time (createOffer -> both connected) Swift<->Swift vs aiortc<->aiortc on 127.0.0.1,
     median of N runs each (target: swift/aiortc <= 0.5)
  3. resident memory per connected, idle PeerConnection (target: < 5 MB)
Always exits 0 when the measurements ran: benchmarks report, they do not gate.

  --runs N             connect runs per implementation (default 7)
  --srtp-seconds S     CPU seconds per SRTP timing loop (default 2)
  --json PATH          where to write the rows (default artifacts/bench.json)
  --python PATH        Python with aiortc (default .venv/bin/python)
  --aiortc-script PATH (default bench/aiortc_connect.py)
"""

struct Options {
    var runs = 7
    var srtpSeconds = 2.0
    var jsonPath = "artifacts/bench.json"
    var python = ".venv/bin/python"
    var aiortcScript = "bench/aiortc_connect.py"
}

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
        default:
            return nil
        }
        i += 1
    }
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

// 2. Connect time
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

// 3. Memory
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
exit(0)
