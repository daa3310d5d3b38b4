// Typed accessors valid at both session and media level (RFC 8839 ICE, RFC 8842 DTLS, RFC 8285
// extmap, RFC 8840 end-of-candidates, and the direction flags).

extension AttributeContainer {
    /// `a=ice-ufrag`
    public var iceUfrag: String? {
        get { value(of: "ice-ufrag") }
        set { setValue(newValue, for: "ice-ufrag") }
    }

    /// `a=ice-pwd`
    public var icePwd: String? {
        get { value(of: "ice-pwd") }
        set { setValue(newValue, for: "ice-pwd") }
    }

    /// `a=ice-options:` as its space-separated tags, e.g. `["trickle"]`; empty removes the line.
    public var iceOptions: [String] {
        get { values(of: "ice-options").flatMap { fields($0).map(String.init) } }
        set { setValue(newValue.isEmpty ? nil : newValue.joined(separator: " "), for: "ice-options") }
    }

    /// Every `a=fingerprint`, in order.
    public var fingerprints: [Fingerprint] {
        get { decoded("fingerprint", Fingerprint.parse) }
        set { replaceAttributes(named: "fingerprint", with: newValue.map(\.attributeValue)) }
    }

    /// The first `a=fingerprint`; setting replaces them all.
    public var fingerprint: Fingerprint? {
        get { fingerprints.first }
        set { fingerprints = newValue.map { [$0] } ?? [] }
    }

    /// `a=setup`
    public var setup: SetupRole? {
        get { value(of: "setup").flatMap { SetupRole(rawValue: String(trimmed($0))) } }
        set { setValue(newValue?.rawValue, for: "setup") }
    }

    /// Every `a=extmap`, in order.
    public var extMaps: [ExtMap] {
        get { decoded("extmap", ExtMap.parse) }
        set { replaceAttributes(named: "extmap", with: newValue.map(\.attributeValue)) }
    }

    /// `a=end-of-candidates`
    public var endOfCandidates: Bool {
        get { hasAttribute("end-of-candidates") }
        set { setFlag("end-of-candidates", newValue) }
    }

    /// The explicit direction flag, if any (the last one wins if several are present).
    public var directionIfPresent: Direction? {
        attributes.last { Direction(rawValue: $0.name) != nil }.flatMap { Direction(rawValue: $0.name) }
    }

    /// `a=sendrecv` / `sendonly` / `recvonly` / `inactive`; sendrecv when absent (RFC 8866 §6.7).
    /// Setting writes an explicit flag in place of the old one.
    public var direction: Direction {
        get { directionIfPresent ?? .sendrecv }
        set {
            replaceAttributes(
                where: { Direction(rawValue: $0.name) != nil }, with: [Attribute(name: newValue.rawValue)])
        }
    }
}
