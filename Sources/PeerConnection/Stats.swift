import Foundation

/// One value in a stats dictionary.
public enum StatsValue: Sendable, Equatable, CustomStringConvertible {
    case int(Int)
    case double(Double)
    case string(String)
    case bool(Bool)

    public var description: String {
        switch self {
        case .int(let v): return String(v)
        case .double(let v): return String(v)
        case .string(let v): return v
        case .bool(let v): return String(v)
        }
    }

    var jsonValue: Any {
        switch self {
        case .int(let v): return v
        case .double(let v): return v.isFinite ? v : 0
        case .string(let v): return v
        case .bool(let v): return v
        }
    }
}

/// W3C `RTCStats`: an id, a type ("outbound-rtp", "inbound-rtp", "remote-inbound-rtp",
/// "candidate-pair", "codec", "media-source", "transport") and named members.
public struct RTCStats: Sendable {
    public var id: String
    public var type: String
    /// Milliseconds since the Unix epoch, like `performance.timeOrigin + now()`.
    public var timestamp: Double
    public var values: [String: StatsValue]

    public init(id: String, type: String, timestamp: Double = Date().timeIntervalSince1970 * 1000, values: [String: StatsValue] = [:]) {
        self.id = id
        self.type = type
        self.timestamp = timestamp
        self.values = values
    }

    public subscript(key: String) -> StatsValue? {
        get { values[key] }
        set { values[key] = newValue }
    }

    public func int(_ key: String) -> Int? {
        switch values[key] {
        case .int(let v): return v
        case .double(let v): return Int(v)
        default: return nil
        }
    }

    public func string(_ key: String) -> String? {
        if case .string(let v) = values[key] { return v }
        return nil
    }

    public func double(_ key: String) -> Double? {
        switch values[key] {
        case .int(let v): return Double(v)
        case .double(let v): return v
        default: return nil
        }
    }
}

/// W3C `RTCStatsReport`.
public struct StatsReport: Sendable {
    public var stats: [String: RTCStats] = [:]

    public init() {}

    public mutating func add(_ s: RTCStats) { stats[s.id] = s }

    public func ofType(_ type: String) -> [RTCStats] {
        stats.values.filter { $0.type == type }.sorted { $0.id < $1.id }
    }

    /// One entry as a JSON object.
    public static func json(_ s: RTCStats) -> [String: Any] {
        var entry: [String: Any] = ["id": s.id, "type": s.type, "timestamp": s.timestamp]
        for (k, v) in s.values { entry[k] = v.jsonValue }
        return entry
    }

    /// `{id: {type, timestamp, …members}}`, ready for JSONSerialization.
    public var jsonObject: [String: Any] {
        stats.mapValues(Self.json)
    }
}
