import Testing
import SDP

/// profile-level-id as libwebrtc reads it, and the three decisions built on it, for every pair
/// of the formats browsers offer (42001f, 42e01f, 4d001f, 640c1f) and a format without one.
@Suite("H.264 profile-level-id")
struct H264ProfileLevelIDTests {
    typealias Profile = H264ProfileLevelID.Profile

    /// The formats of the pair tests: profile-level-id (nil: absent) and the profile it means.
    static let formats: [(id: String?, profile: Profile)] = [
        ("42001f", .baseline), ("42e01f", .constrainedBaseline), ("4d001f", .main), ("640c1f", .constrainedHigh),
        (nil, .constrainedBaseline),
    ]
    static var pairs: [(String?, String?)] { formats.flatMap { a in formats.map { b in (a.id, b.id) } } }

    static func profile(_ id: String?) -> Profile {
        formats.first { $0.id == id }?.profile ?? .constrainedBaseline
    }

    /// An fmtp line with packetization-mode `mode`, the profile of `id` at `level` (hex), and
    /// level-asymmetry-allowed if asked.
    static func fmtp(_ id: String?, level: String = "1f", asymmetry: Bool = false, mode: Int = 1) -> String {
        var items = ["packetization-mode=\(mode)"]
        if let id { items.append("profile-level-id=\(id.prefix(4))\(level)") }
        if asymmetry { items.insert("level-asymmetry-allowed=1", at: 0) }
        return items.joined(separator: ";")
    }

    @Test func parsesProfilesFromTheConstraintFlagsNotTheString() throws {
        let cases: [(String, Profile, H264ProfileLevelID.Level)] = [
            ("42001f", .baseline, .level3_1), ("42e01f", .constrainedBaseline, .level3_1),
            ("42c01f", .constrainedBaseline, .level3_1), ("424015", .constrainedBaseline, .level2_1),
            ("4d001f", .main, .level3_1), ("4d8032", .constrainedBaseline, .level5), ("58c01f", .constrainedBaseline, .level3_1),
            ("58801f", .baseline, .level3_1), ("640c1f", .constrainedHigh, .level3_1), ("64001f", .high, .level3_1),
            ("640034", .high, .level5_2), ("f4001f", .predictiveHigh444, .level3_1), ("42E01F", .constrainedBaseline, .level3_1),
            // Level 1b: level_idc 11 with constraint_set3; without it, 1.1.
            ("42f00b", .constrainedBaseline, .level1b), ("42100b", .baseline, .level1b), ("4d100b", .main, .level1b),
            ("42e00b", .constrainedBaseline, .level1_1), ("640c0b", .constrainedHigh, .level1_1),
        ]
        for (text, profile, level) in cases {
            let id = try H264ProfileLevelID(parsing: text)
            #expect(id.profile == profile, "\(text)")
            #expect(id.level == level, "\(text)")
        }
    }

    @Test func writesTheCanonicalForm() throws {
        for text in ["42001f", "42e01f", "4d001f", "640c1f", "64001f", "f4001f", "42e034", "42f00b", "42100b", "4d100b", "42e00a"] {
            #expect(try H264ProfileLevelID(parsing: text).description == text)
        }
        #expect(try H264ProfileLevelID(parsing: "42c01f").description == "42e01f")
        #expect(H264ProfileLevelID(profile: .high, level: .level1b) == nil, "High cannot signal level 1b")
        #expect(H264ProfileLevelID(profile: .main, level: .level1b)?.description == "4d100b")
    }

    @Test(arguments: ["zz", "42e0", "", "zz0000", "42e0zz", "42e01f00", "+42e01", " 42e01", "000000", "42e000", "42e0ff",
                      "ffffff", "421c1f", "641c1f", "6e001f", "42e01\u{FF10}"])
    func rejectsBadProfileLevelIDsWithAReason(_ text: String) {
        let error = #expect(throws: SDPError.self) { try H264ProfileLevelID(parsing: text) }
        #expect(error?.description.hasPrefix("H.264 profile-level-id \"\(text)\": ") == true, "\(String(describing: error))")
        // In an fmtp line it matches nothing, itself included.
        let bad = H264FormatParameters(fmtp: "packetization-mode=1;profile-level-id=\(text)")
        #expect(bad.profileLevelID == nil)
        #expect(!bad.isSameCodec(as: bad))
        for (id, _) in Self.formats {
            let good = H264FormatParameters(fmtp: Self.fmtp(id))
            #expect(!bad.isSameCodec(as: good) && !good.isSameCodec(as: bad))
            #expect(!bad.receives(good) && !good.receives(bad))
            #expect(good.answerProfileLevelID(offered: bad) == nil)
        }
    }

    @Test func anAbsentProfileLevelIDIsConstrainedBaseline31AsInLibwebrtc() {
        let absent = H264FormatParameters(fmtp: "packetization-mode=1")
        #expect(absent.profileLevelID?.description == "42e01f")
        #expect(!absent.hasProfileLevelID)
        #expect(H264FormatParameters(fmtp: nil).packetizationMode == "0")
    }

    @Test(arguments: pairs)
    func sameCodecIsSameProfileAndPacketizationMode(_ a: String?, _ b: String?) {
        let x = H264FormatParameters(fmtp: Self.fmtp(a)), y = H264FormatParameters(fmtp: Self.fmtp(b, level: "0d"))
        let same = Self.profile(a) == Self.profile(b)
        #expect(x.isSameCodec(as: y) == same, "\(a ?? "absent") vs \(b ?? "absent")")
        #expect(y.isSameCodec(as: x) == same)
        // A different packetization mode is another codec, whatever the profiles.
        let mode0 = H264FormatParameters(fmtp: Self.fmtp(b, mode: 0))
        #expect(!x.isSameCodec(as: mode0))
    }

    @Test(arguments: pairs)
    func answerLevelIsOursWithAsymmetryElseTheLower(_ local: String?, _ offered: String?) {
        let same = Self.profile(local) == Self.profile(offered)
        let ours = Self.profile(local)
        func answer(localAsymmetry: Bool, offeredAsymmetry: Bool) -> String? {
            // We support level 3.1, the offer says 1.3 (an absent profile-level-id means 3.1).
            H264FormatParameters(fmtp: Self.fmtp(local, asymmetry: localAsymmetry))
                .answerProfileLevelID(offered: H264FormatParameters(fmtp: Self.fmtp(offered, level: "0d", asymmetry: offeredAsymmetry)))?
                .description
        }
        func expected(_ level: H264ProfileLevelID.Level) -> String? {
            guard same, local != nil || offered != nil else { return nil }
            return H264ProfileLevelID(profile: ours, level: level)?.description
        }
        let lower: H264ProfileLevelID.Level = offered == nil ? .level3_1 : .level1_3
        #expect(answer(localAsymmetry: true, offeredAsymmetry: true) == expected(.level3_1), "\(local ?? "absent") ← \(offered ?? "absent")")
        #expect(answer(localAsymmetry: true, offeredAsymmetry: false) == expected(lower))
        #expect(answer(localAsymmetry: false, offeredAsymmetry: true) == expected(lower))
        #expect(answer(localAsymmetry: false, offeredAsymmetry: false) == expected(lower))
    }

    @Test func answerLevelNegotiationOrdersLevel1bBetween1And11() throws {
        let b = H264FormatParameters(fmtp: "profile-level-id=42f00b")
        #expect(H264FormatParameters(fmtp: "profile-level-id=42e00b").answerProfileLevelID(offered: b)?.description == "42f00b")
        #expect(H264FormatParameters(fmtp: "profile-level-id=42e00a").answerProfileLevelID(offered: b)?.description == "42e00a")
        #expect(b.answerProfileLevelID(offered: H264FormatParameters(fmtp: "profile-level-id=42e00c"))?.description == "42f00b")
    }

    @Test func answerFmtpIsOursWithTheNegotiatedProfileLevelID() {
        let ours = "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"
        #expect(H264FormatParameters.answerFmtp(local: ours, offered: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e034") == ours)
        #expect(H264FormatParameters.answerFmtp(local: ours, offered: "packetization-mode=1;profile-level-id=42c00d")
                == "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e00d")
        #expect(H264FormatParameters.answerFmtp(local: "packetization-mode=1", offered: "packetization-mode=1;profile-level-id=42e015")
                == "packetization-mode=1;profile-level-id=42e015")
        // Not the same codec (or both without a profile-level-id): ours as it is.
        #expect(H264FormatParameters.answerFmtp(local: ours, offered: "packetization-mode=1;profile-level-id=42001f") == ours)
        #expect(H264FormatParameters.answerFmtp(local: "packetization-mode=1", offered: "packetization-mode=1") == "packetization-mode=1")
    }

    /// The relay's player mapping: may a player that offered `player` get a stream published as
    /// `stream`? Its profile must decode the stream's (Annex A), a Baseline stream counting as
    /// constrained baseline (what OpenH264 and every WebRTC encoder emit under 42001f).
    @Test(arguments: pairs)
    func relayPlayerMapping(_ player: String?, _ stream: String?) {
        let expected: Bool
        switch (Self.profile(player), Self.profile(stream)) {
        case (let p, let s) where p == s: expected = true
        case (_, .constrainedBaseline), (_, .baseline): expected = true   // B, CB, Main, constrained High decode them
        default: expected = false   // Main ↔ constrained High, or anything → baseline-only decoders
        }
        let receiver = H264FormatParameters(fmtp: Self.fmtp(player, level: "0d"))
        #expect(receiver.receives(H264FormatParameters(fmtp: Self.fmtp(stream))) == expected,
                "player \(player ?? "absent") ← stream \(stream ?? "absent")")
        let otherMode = H264FormatParameters(fmtp: Self.fmtp(stream, mode: 0))
        #expect(!receiver.receives(otherMode))
    }

    @Test func profileHierarchy() {
        #expect(Profile.high.decodes(.main) && Profile.high.decodes(.constrainedHigh) && Profile.predictiveHigh444.decodes(.high))
        #expect(!Profile.constrainedHigh.decodes(.main) && !Profile.main.decodes(.high) && !Profile.constrainedBaseline.decodes(.baseline))
        for p in Profile.allCases { #expect(p.decodes(.constrainedBaseline) && p.decodes(p)) }
    }
}
