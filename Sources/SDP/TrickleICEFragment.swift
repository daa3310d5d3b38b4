// `application/trickle-ice-sdpfrag` (RFC 8840 §9): the ICE part of a description, as WHIP/WHEP
// (RFC 9725 §4.3) send it in HTTP PATCH bodies for trickle ICE and ICE restarts. Session-level
// a= lines (ice-ufrag, ice-pwd, ice-options, ice-lite, group…) and m= sections that each name
// their m-line of the full description with a=mid and carry a=candidate / a=end-of-candidates.
// No v=, o=, s=, t= or any other line type.

/// A parsed (or built) trickle-ice-sdpfrag body.
public struct TrickleICEFragment: Sendable, Equatable, AttributeContainer {
    /// The a= lines before the first m= line, in order.
    public var attributes: [Attribute]
    /// The m= sections, in order; each has an `a=mid`.
    public var media: [MediaDescription]

    public init(attributes: [Attribute] = [], media: [MediaDescription] = []) {
        self.attributes = attributes
        self.media = media
    }

    /// The media type of the body (`Content-Type`).
    public static let contentType = "application/trickle-ice-sdpfrag"

    /// Parses a fragment. Throws `SDPError` naming the 1-based line that was wrong.
    public init(parsing text: String) throws(SDPError) {
        let lines = SDPParser.splitLines(text)
        guard !lines.isEmpty else { throw SDPError(line: 1, message: "empty trickle-ice-sdpfrag (no a= or m= lines)") }
        var fragment = TrickleICEFragment()
        for (index, line) in lines.enumerated() {
            let number = index + 1
            func fail(_ message: String) -> SDPError { SDPError(line: number, message: message) }
            guard line.count >= 2, line[line.startIndex + 1] == UInt8(ascii: "="), let type = line.first else {
                throw fail("expected \"a=<attribute>\" or \"m=<media line>\"")
            }
            let value = Substring(String(decoding: line.dropFirst(2), as: UTF8.self))
            switch type {
            case UInt8(ascii: "m"):
                if let last = fragment.media.last, last.mid == nil {
                    throw SDPError(line: number, message: "the m= section before this line has no a=mid (RFC 8840 needs one per m= line)")
                }
                do { fragment.media.append(try SDPParser.parseMediaLine(value)) } catch { throw fail(error.message) }
            case UInt8(ascii: "a"):
                let attribute: Attribute
                do { attribute = try SDPParser.parseAttribute(value) } catch { throw fail(error.message) }
                if Self.singleValued.contains(attribute.name) {
                    let present = fragment.media.last.map { $0.hasAttribute(attribute.name) } ?? fragment.hasAttribute(attribute.name)
                    if present { throw fail("duplicate a=\(attribute.name) in the same section") }
                }
                if fragment.media.isEmpty {
                    fragment.attributes.append(attribute)
                } else {
                    fragment.media[fragment.media.count - 1].attributes.append(attribute)
                }
            default:
                let shown = UnicodeScalar(type).escaped(asASCII: true)
                throw fail("\(shown)= lines do not belong in a trickle-ice-sdpfrag (only a= and m= lines)")
            }
        }
        if let last = fragment.media.last, last.mid == nil {
            throw SDPError(line: lines.count, message: "the last m= section has no a=mid (RFC 8840 needs one per m= line)")
        }
        self = fragment
    }

    /// Attributes a section may carry once.
    static let singleValued: Set<String> = ["ice-ufrag", "ice-pwd", "mid", "ice-lite", "end-of-candidates"]

    /// The body, CRLF line endings: session-level lines, then each m= section.
    public func serialize() -> String {
        var out = ""
        for attribute in attributes { out += "a=\(attribute.description)\r\n" }
        for section in media {
            out += "m=\(section.mediaLine)\r\n"
            for attribute in section.attributes { out += "a=\(attribute.description)\r\n" }
        }
        return out
    }

    // MARK: what a receiver wants from it

    /// `ice-ufrag` and `ice-pwd`: session level, else the first m= section that has them; nil if
    /// the fragment carries none. Throws when only one of the two is given, or when sections
    /// disagree (a fragment belongs to one ICE generation).
    public func iceCredentials() throws(SDPError) -> (ufrag: String, pwd: String)? {
        var found: (ufrag: String, pwd: String)?
        for container in [attributes] + media.map(\.attributes) {
            let level = TrickleICEFragment(attributes: container)
            switch (level.iceUfrag, level.icePwd) {
            case (nil, nil): continue
            case (let u?, let p?):
                if let found, found.ufrag != u || found.pwd != p {
                    throw SDPError(line: 0, message: "the fragment carries two different ICE credentials (ufrag \(found.ufrag) and \(u))")
                }
                found = (u, p)
            case (.some, nil): throw SDPError(line: 0, message: "a=ice-ufrag without a=ice-pwd")
            case (nil, .some): throw SDPError(line: 0, message: "a=ice-pwd without a=ice-ufrag")
            }
        }
        return found
    }

    /// Every candidate with the mid of its m= section (nil: session level, i.e. the bundle's
    /// transport), and whether that level ended its candidates.
    public var candidateGroups: [(mid: String?, candidates: [String], endOfCandidates: Bool)] {
        var groups: [(mid: String?, candidates: [String], endOfCandidates: Bool)] = []
        let session = TrickleICEFragment(attributes: attributes)
        let sessionCandidates = session.attributes(named: "candidate").map(\.description)
        if !sessionCandidates.isEmpty || session.endOfCandidates { groups.append((nil, sessionCandidates, session.endOfCandidates)) }
        for m in media { groups.append((m.mid, m.candidates, m.endOfCandidates)) }
        return groups
    }

    // MARK: building and applying

    /// The ICE part of `description` for its bundle transport (its first m= section with a
    /// port): credentials at session level (and `a=ice-lite` if it has it), that m= line with
    /// its mid, `candidates` (nil: the description's own) and `a=end-of-candidates` when
    /// `endOfCandidates` (nil: as the description says). Nil when it has no credentials.
    public init?(iceOf description: SessionDescription, candidates: [String]? = nil, endOfCandidates: Bool? = nil) {
        guard let index = description.media.firstIndex(where: { $0.port != 0 }) ?? description.media.indices.first else { return nil }
        let m = description.media[index]
        guard let ufrag = m.iceUfrag ?? description.iceUfrag, let pwd = m.icePwd ?? description.icePwd else { return nil }
        var fragment = TrickleICEFragment()
        if description.iceLite { fragment.addAttribute("ice-lite") }
        fragment.iceUfrag = ufrag
        fragment.icePwd = pwd
        var section = MediaDescription(kind: m.kind, port: m.port, portCount: m.portCount, proto: m.proto, formats: m.formats)
        section.mid = m.mid ?? String(index)
        section.candidates = candidates ?? (m.candidates + description.attributes(named: "candidate").map(\.description))
        section.endOfCandidates = endOfCandidates ?? (m.endOfCandidates || description.endOfCandidates)
        fragment.media = [section]
        self = fragment
    }
}

extension SessionDescription {
    /// The description after an ICE restart that `fragment` signals (RFC 9725 §4.3.3, where the
    /// other side sends no new description): the new credentials wherever the old ones were, the
    /// old candidates and end-of-candidates dropped, the fragment's put on the m-lines with its
    /// mids (session-level ones on the bundle's first live m-line), the session version bumped.
    /// Throws when the fragment has no credentials or names a mid the description lacks.
    public func applyingICERestart(_ fragment: TrickleICEFragment) throws(SDPError) -> SessionDescription {
        guard let credentials = try fragment.iceCredentials() else {
            throw SDPError(line: 0, message: "an ICE restart fragment needs a=ice-ufrag and a=ice-pwd")
        }
        var out = self
        let mids = media.enumerated().map { $1.mid ?? String($0) }
        let bundleIndex = media.firstIndex(where: { $0.port != 0 }) ?? 0
        for group in fragment.candidateGroups {
            if let mid = group.mid, !mids.contains(mid) {
                throw SDPError(line: 0, message: "the fragment names mid \"\(mid)\", which the description does not have (mids: \(mids.joined(separator: ", ")))")
            }
        }
        func reset(_ container: inout some AttributeContainer) {
            if container.iceUfrag != nil { container.iceUfrag = credentials.ufrag }
            if container.icePwd != nil { container.icePwd = credentials.pwd }
            container.removeAttributes(named: "candidate")
            container.removeAttributes(named: "end-of-candidates")
        }
        reset(&out)
        for i in out.media.indices { reset(&out.media[i]) }
        if out.iceUfrag == nil, !out.media.contains(where: { $0.iceUfrag != nil }) {
            out.iceUfrag = credentials.ufrag
            out.icePwd = credentials.pwd
        }
        for group in fragment.candidateGroups {
            let index = group.mid.flatMap { mids.firstIndex(of: $0) } ?? bundleIndex
            guard out.media.indices.contains(index) else { continue }
            for c in group.candidates { out.media[index].addCandidate(c) }
            if group.endOfCandidates { out.media[index].endOfCandidates = true }
        }
        out.origin.sessionVersion &+= 1
        return out
    }
}
