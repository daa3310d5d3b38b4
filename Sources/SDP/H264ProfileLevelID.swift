// H.264 fmtp parameters (RFC 6184 §8.1) read the way libwebrtc reads them
// (api/video_codecs/h264_profile_level_id): the one place SwiftRTC decides which H.264 formats
// are the same codec, what level an answer carries, and which streams a receiver can decode.

/// A `profile-level-id`: the profile (from profile_idc and the constraint-set flags, not the hex
/// string) and the level.
public struct H264ProfileLevelID: Sendable, Hashable, CustomStringConvertible {
    public enum Profile: Sendable, Hashable, CaseIterable {
        case constrainedBaseline, baseline, main, constrainedHigh, high, predictiveHigh444
    }

    /// level_idc: ten times the level number (31 is 3.1); level 1b has a case of its own, as it is
    /// written as level_idc 11 with constraint_set3 set.
    public enum Level: UInt8, Sendable, Hashable, CaseIterable, Comparable {
        case level1b = 0, level1 = 10, level1_1 = 11, level1_2 = 12, level1_3 = 13
        case level2 = 20, level2_1 = 21, level2_2 = 22, level3 = 30, level3_1 = 31, level3_2 = 32
        case level4 = 40, level4_1 = 41, level4_2 = 42, level5 = 50, level5_1 = 51, level5_2 = 52

        /// 1b lies between 1 and 1.1.
        private var rank: Int { self == .level1b ? 105 : Int(rawValue) * 10 }
        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
    }

    public let profile: Profile
    public let level: Level

    /// nil for level 1b with a profile that cannot signal it (only the baseline ones and Main can).
    public init?(profile: Profile, level: Level) {
        if level == .level1b, ![.constrainedBaseline, .baseline, .main].contains(profile) { return nil }
        self.profile = profile
        self.level = level
    }

    /// What a format without `profile-level-id` means. RFC 6184 says Baseline level 1 (42000a);
    /// libwebrtc, and so every browser, reads it as constrained baseline 3.1, and we must agree
    /// with them on which formats are the same codec.
    public static let absentDefault = H264ProfileLevelID(checked: .constrainedBaseline, .level3_1)

    private init(checked profile: Profile, _ level: Level) {
        self.profile = profile
        self.level = level
    }

    /// Parses the six hex digits of a profile-level-id, e.g. "42e01f".
    public init(parsing text: String) throws(SDPError) {
        func fail(_ why: String) -> SDPError { SDPError(line: 0, message: "H.264 profile-level-id \"\(text)\": \(why)") }
        guard text.utf8.count == 6, text.allSatisfy(\.isHexDigit), let value = UInt32(text, radix: 16) else {
            throw fail("not six hex digits")
        }
        let profileIdc = UInt8(value >> 16), iop = UInt8(value >> 8 & 0xff), levelIdc = UInt8(value & 0xff)
        guard var level = Level(rawValue: levelIdc), level != .level1b else { throw fail("unknown level_idc \(levelIdc)") }
        // Level 1b is level_idc 11 with constraint_set3 (RFC 6184 §8.1).
        if level == .level1_1, iop & 0x10 != 0 { level = .level1b }
        guard let profile = Self.profile(idc: profileIdc, iop: iop) else {
            throw fail("unknown profile (profile_idc 0x\(String(profileIdc, radix: 16)), constraint flags 0x\(String(iop, radix: 16)))")
        }
        self.init(checked: profile, level)
    }

    /// RFC 6184 §8.1's table as libwebrtc matches it: profile_idc, then a pattern over the
    /// constraint_set0…7 flags (first character = constraint_set0 = the top bit; x: either).
    private static let patterns: [(idc: UInt8, flags: String, profile: Profile)] = [
        (0x42, "x1xx0000", .constrainedBaseline), (0x4d, "1xxx0000", .constrainedBaseline),
        (0x58, "11xx0000", .constrainedBaseline), (0x42, "x0xx0000", .baseline), (0x58, "10xx0000", .baseline),
        (0x4d, "0x0x0000", .main), (0x64, "00000000", .high), (0x64, "00001100", .constrainedHigh),
        (0xf4, "00000000", .predictiveHigh444),
    ]

    private static func profile(idc: UInt8, iop: UInt8) -> Profile? {
        patterns.first { p in
            p.idc == idc && zip(p.flags, (0..<8).reversed()).allSatisfy { c, bit in
                c == "x" || (c == "1") == (iop >> bit & 1 == 1)
            }
        }?.profile
    }

    /// The canonical hex form libwebrtc writes (42e01f, 4d0032, 42f00b for constrained baseline 1b).
    public var description: String {
        let prefix: String
        switch (profile, level) {
        case (.constrainedBaseline, .level1b): return "42f00b"
        case (.baseline, .level1b): return "42100b"
        case (.main, .level1b): return "4d100b"
        case (.constrainedBaseline, _): prefix = "42e0"
        case (.baseline, _): prefix = "4200"
        case (.main, _): prefix = "4d00"
        case (.constrainedHigh, _): prefix = "640c"
        case (.high, _): prefix = "6400"
        case (.predictiveHigh444, _): prefix = "f400"
        }
        let hex = String(level.rawValue, radix: 16)
        return prefix + (hex.count == 1 ? "0" : "") + hex
    }
}

extension H264ProfileLevelID.Profile {
    /// Whether a decoder conforming to this profile decodes every stream of `stream`'s profile
    /// (H.264 Annex A: constrained baseline streams conform to Baseline and Main; High decoders
    /// take Main and constrained High; High 4:4:4 Predictive ones take High).
    public func decodes(_ stream: Self) -> Bool {
        switch stream {
        case .constrainedBaseline: true
        case .baseline: self == .baseline
        case .main: [.main, .high, .predictiveHigh444].contains(self)
        case .constrainedHigh: [.constrainedHigh, .high, .predictiveHigh444].contains(self)
        case .high: [.high, .predictiveHigh444].contains(self)
        case .predictiveHigh444: self == .predictiveHigh444
        }
    }
}

/// The parameters of one H.264 fmtp line that decide compatibility.
public struct H264FormatParameters: Sendable, Equatable {
    /// "0" when absent (RFC 6184 §8.1).
    public var packetizationMode: String
    /// `H264ProfileLevelID.absentDefault` when absent; nil when present but invalid (such a
    /// format matches nothing).
    public var profileLevelID: H264ProfileLevelID?
    public var levelAsymmetryAllowed: Bool
    /// Whether the line has a profile-level-id at all (an answer to two formats without one
    /// carries none either).
    public var hasProfileLevelID: Bool

    public init(fmtp: String?) {
        let parameters = FormatParameter.parse(fmtp ?? "")
        packetizationMode = parameters.value(for: "packetization-mode") ?? "0"
        levelAsymmetryAllowed = parameters.value(for: "level-asymmetry-allowed") == "1"
        if let text = parameters.value(for: "profile-level-id") {
            hasProfileLevelID = true
            profileLevelID = try? H264ProfileLevelID(parsing: text)
        } else {
            hasProfileLevelID = false
            profileLevelID = .absentDefault
        }
    }

    /// libwebrtc's rule (`H264IsSameProfile` and the packetization mode): the same codec for
    /// offer/answer matching; levels may differ.
    public func isSameCodec(as other: Self) -> Bool {
        guard packetizationMode == other.packetizationMode, let mine = profileLevelID, let theirs = other.profileLevelID else { return false }
        return mine.profile == theirs.profile
    }

    /// The profile-level-id of an answer to `offered` by a side whose own format is `self`
    /// (libwebrtc's `H264GenerateProfileLevelIdForAnswer`): our profile; with level asymmetry
    /// allowed by both, our level (each side states what it receives), else the lower of the two.
    /// nil when the formats are not the same codec, or neither names a profile-level-id.
    public func answerProfileLevelID(offered: Self) -> H264ProfileLevelID? {
        guard hasProfileLevelID || offered.hasProfileLevelID, isSameCodec(as: offered),
              let mine = profileLevelID, let theirs = offered.profileLevelID else { return nil }
        let level = levelAsymmetryAllowed && offered.levelAsymmetryAllowed ? mine.level : min(mine.level, theirs.level)
        return H264ProfileLevelID(profile: mine.profile, level: level)
    }

    /// Our fmtp line for answering `offered` with our format `local`: ours, with the negotiated
    /// profile-level-id (see `answerProfileLevelID`).
    public static func answerFmtp(local: String, offered: String?) -> String {
        let answer = H264FormatParameters(fmtp: local).answerProfileLevelID(offered: H264FormatParameters(fmtp: offered))
        guard let answer else { return local }
        var parameters = FormatParameter.parse(local)
        if let i = parameters.firstIndex(where: { $0.name.lowercased() == "profile-level-id" }) {
            parameters[i].value = answer.description
        } else {
            parameters.append(FormatParameter(name: "profile-level-id", value: answer.description))
        }
        return FormatParameter.serialize(parameters)
    }

    /// Whether a receiver that offered `self` can decode a stream sent under `stream`'s format:
    /// a forwarder's choice (the relay picks, for each player, a payload type for what the
    /// publisher sends). Same packetization mode, and our profile decodes theirs — with a Baseline
    /// stream taken as constrained baseline: the Baseline-only tools (FMO, ASO, redundant slices)
    /// are produced by no WebRTC encoder (OpenH264, which Chromium and we use, has none of them),
    /// and Chromium offers 42001f first, so without this a player offering only 42e01f got no video.
    public func receives(_ stream: Self) -> Bool {
        guard packetizationMode == stream.packetizationMode, let mine = profileLevelID?.profile,
              let theirs = stream.profileLevelID?.profile else { return false }
        return mine.decodes(theirs) || (theirs == .baseline && mine.decodes(.constrainedBaseline))
    }
}
