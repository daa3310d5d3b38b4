import Foundation

/// What a V4L2 camera reported (as `v4l2-ctl --all --list-formats-ext --list-ctrls-menus`
/// shows it), as JSON: enough for `RecordedV4L2Device` to behave like the driver.
public struct V4L2Recording: Sendable, Codable, Hashable {
    public struct Size: Sendable, Codable, Hashable {
        public var width: Int
        public var height: Int
        /// Discrete frame intervals, "1/30" style.
        public var intervals: [String]?
        /// A continuous interval range instead: fastest and slowest interval.
        public var minInterval: String?
        public var maxInterval: String?
    }
    public struct StepwiseSize: Sendable, Codable, Hashable {
        public var minWidth: Int, maxWidth: Int, stepWidth: Int
        public var minHeight: Int, maxHeight: Int, stepHeight: Int
        public var minInterval: String
        public var maxInterval: String
    }
    public struct Format: Sendable, Codable, Hashable {
        /// "YUYV", "MJPG", "NV12", "YU12".
        public var fourcc: String
        public var description: String
        public var sizes: [Size]?
        public var stepwise: StepwiseSize?
    }
    public struct MenuItem: Sendable, Codable, Hashable {
        public var index: Int
        public var name: String?
        public var value: Int64?
    }
    /// The control is inactive (writes fail with `inactiveError`) unless control `id` has one
    /// of `values` — as exposure_time_absolute under auto_exposure.
    public struct ActiveWhen: Sendable, Codable, Hashable {
        public var id: String
        public var values: [Int32]
    }
    public struct Control: Sendable, Codable, Hashable {
        /// Hex V4L2_CID ("0x009a0902").
        public var id: String
        public var name: String
        /// "int", "bool", "menu", "intmenu", "button".
        public var type: String
        public var min: Int64
        public var max: Int64
        public var step: Int64
        public var `default`: Int64
        public var menu: [MenuItem]?
        public var readOnly: Bool?
        public var activeWhen: ActiveWhen?
        /// "EACCES" or "EBUSY" (what the driver answers a write to an inactive control).
        public var inactiveError: String?
    }
    public var driver: String
    public var card: String
    public var busInfo: String
    public var formats: [Format]
    public var controls: [Control]
    /// A metadata-only node (UVC cameras have one next to the video node).
    public var metadataOnly: Bool?
    /// "EBUSY" when the driver refuses S_PARM while streaming (uvcvideo does).
    public var sParmWhileStreaming: String?

    public static func decode(json: String) throws(CameraError) -> V4L2Recording {
        do {
            return try JSONDecoder().decode(V4L2Recording.self, from: Data(json.utf8))
        } catch {
            throw CameraError(.invalidArgument, "bad V4L2 recording: \(error)")
        }
    }

    static func fraction(_ s: String) -> V4L2Fraction? {
        let parts = s.split(separator: "/")
        guard parts.count == 2, let n = UInt32(parts[0]), let d = UInt32(parts[1]), n > 0, d > 0 else { return nil }
        return V4L2Fraction(n, d)
    }

    static func controlID(_ s: String) -> UInt32? {
        s.hasPrefix("0x") ? UInt32(s.dropFirst(2), radix: 16) : UInt32(s)
    }

    static func errno(_ s: String?) -> Int32 {
        switch s {
        case "EBUSY": return EBUSY
        case "EINVAL": return EINVAL
        case "EPERM": return EPERM
        default: return EACCES
        }
    }
}
