// Reconnect time (issue 21): after a 40 s outage of the publisher's path (past the 30 s consent
// expiry) and after the publisher's address changes, how long until a viewer sees video again; p50
// and p95 over N runs. The runs are bench/reconnect_bench.py: `swiftrtc serve` behind
// interop/netem.py, `swiftrtc publish` 1280x720@30 and a fresh `swiftrtc play` per run, in a
// loopback-only network namespace of its own (it re-executes itself under `unshare --net`; `ip
// addr` changes must not touch the host). The product has no consent-timeout setting, so the 40 s
// are real: about 9 minutes for 10 runs, plus about 3 for the address changes.
import Foundation

func reconnectBenchmarks(python: String, swiftrtc: String, runs: Int) -> [Row] {
    let scenarios: [(key: String, name: String, target: Double, what: String)] = [
        ("outage_40s", "outage_40s", 3, "the publisher's path black-holed for 40 s (both ways, and any flow it opens meanwhile), then back"),
        ("address_change", "address_change", 2, "the publisher's address deleted and another added (ip addr on lo, 127.0.0.3 <-> .4)"),
    ]
    let doc: [String: Any]
    do {
        doc = try pythonJSON(python: python, script: "bench/reconnect_bench.py",
                             arguments: ["--swiftrtc", swiftrtc, "--runs", String(runs)])
    } catch {
        return scenarios.map { Row("reconnect.\($0.name).p95", nil, "s", target: .atMost($0.target), note: "failed: \(error)") }
    }
    var rows: [Row] = []
    for s in scenarios {
        let result = doc[s.key] as? [String: Any] ?? [:]
        let never = result["never"] as? Int ?? runs
        let p50 = (result["p50"] as? NSNumber)?.doubleValue, p95 = (result["p95"] as? NSNumber)?.doubleValue
        let wall = (result["wallSeconds"] as? NSNumber)?.doubleValue ?? 0
        let values = (result["seconds"] as? [Any] ?? []).map { ($0 as? NSNumber).map { String(format: "%.2f", $0.doubleValue) } ?? "never" }
        let note = "\(s.what); seconds from the path's return to the end of the viewer's freeze (gaps > 500 ms), "
            + "\(runs) runs in \(Int(wall)) s: [\(values.joined(separator: ", "))]"
            + (never > 0 ? "; \(never) never back within 10 s (the p50/p95 are of the rest)" : "")
        rows.append(Row("reconnect.\(s.name).p50", p50, "s", target: .atMost(s.target), note: note))
        // A run that never came back fails the p95 whatever the others did.
        rows.append(Row("reconnect.\(s.name).p95", never > 0 ? nil : p95, "s", target: .atMost(s.target),
                        note: never > 0 ? "\(never) of \(runs) runs never back" : nil))
    }
    return rows
}
