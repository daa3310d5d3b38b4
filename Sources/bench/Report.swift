// Rows of the benchmark report: a value, its unit, an optional target, and whether it was met;
// printed as a table and written as JSON.
import Foundation

/// A bound a measured value is compared with.
enum Target: Sendable {
    case atLeast(Double)
    case atMost(Double)
    case below(Double)

    func met(by value: Double) -> Bool {
        switch self {
        case .atLeast(let bound): return value >= bound
        case .atMost(let bound): return value <= bound
        case .below(let bound): return value < bound
        }
    }

    var text: String {
        switch self {
        case .atLeast(let bound): return ">= \(formatNumber(bound))"
        case .atMost(let bound): return "<= \(formatNumber(bound))"
        case .below(let bound): return "< \(formatNumber(bound))"
        }
    }
}

struct Row: Sendable {
    var name: String
    /// nil when the measurement could not be made (then `note` says why and a target counts as missed).
    var value: Double?
    var unit: String
    var target: Target?
    var note: String?

    init(_ name: String, _ value: Double?, _ unit: String, target: Target? = nil, note: String? = nil) {
        self.name = name
        self.value = value
        self.unit = unit
        self.target = target
        self.note = note
    }

    /// nil when there is no target.
    var passed: Bool? {
        guard let target else { return nil }
        guard let value else { return false }
        return target.met(by: value)
    }

    var verdict: String {
        switch passed {
        case .none: return "-"
        case .some(true): return "pass"
        case .some(false): return "FAIL"
        }
    }

    var valueText: String {
        guard let value else { return "n/a" }
        switch unit {
        case "packets/s": return formatGrouped(value)
        case "ratio": return String(format: "%.3f", value)
        case "ms": return String(format: "%.1f", value)
        case "MB", "ms/frame", "us/packet", "cores": return String(format: "%.2f", value)
        case "%": return String(format: "%.3f", value)
        case "kbps": return String(format: "%.0f", value)
        default: return formatNumber(value)
        }
    }
}

func formatNumber(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(format: "%g", value)
}

/// 1234567.8 → "1,234,568".
func formatGrouped(_ value: Double) -> String {
    let digits = String(Int(value.rounded()).magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return (value < 0 ? "-" : "") + out
}

/// A fixed-width table, then the notes of the rows that have one, numbered.
func renderTable(_ rows: [Row], title: String) -> String {
    var notes: [String] = []
    var cells: [[String]] = [["name", "value", "unit", "target", "result"]]
    for row in rows {
        var name = row.name
        if let note = row.note {
            if !notes.contains(note) { notes.append(note) }
            name += " [\((notes.firstIndex(of: note) ?? 0) + 1)]"
        }
        cells.append([name, row.valueText, row.unit, row.target?.text ?? "-", row.verdict])
    }
    let widths = (0..<5).map { column in cells.map { $0[column].count }.max() ?? 0 }
    func line(_ c: [String]) -> String {
        let padded = c.enumerated().map { i, text in
            let pad = String(repeating: " ", count: widths[i] - text.count)
            return i == 1 ? pad + text : text + pad    // numbers right-aligned
        }
        return padded.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    var out = [title, line(cells[0]), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
    out += cells.dropFirst().map(line)
    if !notes.isEmpty {
        out.append("")
        out += notes.enumerated().map { "[\($0.offset + 1)] \($0.element)" }
    }
    return out.joined(separator: "\n")
}

func rowsJSON(_ rows: [Row]) -> [[String: Any]] {
    rows.map { row in
        var object: [String: Any] = [
            "name": row.name,
            "value": row.value.map { $0 as Any } ?? NSNull(),
            "unit": row.unit,
            "target": row.target?.text ?? NSNull(),
            "pass": row.passed.map { $0 as Any } ?? NSNull(),
        ]
        if let note = row.note { object["note"] = note }
        return object
    }
}

/// Writes `object` as pretty JSON, creating the parent directory.
func writeJSON(_ object: [String: Any], to path: String) throws {
    let url = URL(fileURLWithPath: path)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    try (data + Data("\n".utf8)).write(to: url)
}
