// Typed accessors that only make sense at session level.

extension SessionDescription {
    /// Every `a=group`, in order.
    public var groups: [Group] {
        get { decoded("group", Group.parse) }
        set { replaceAttributes(named: "group", with: newValue.map(\.attributeValue)) }
    }

    /// The mids of each `a=group:BUNDLE` (RFC 9143), in order. Setting replaces only the BUNDLE
    /// groups and keeps other group semantics.
    public var bundleGroups: [[String]] {
        get { groups.filter { $0.semantics == "BUNDLE" }.map(\.mids) }
        set {
            let isBundle: (Attribute) -> Bool = { attribute in
                attribute.name == "group" && attribute.value.flatMap { Group(attributeValue: $0) }?.semantics == "BUNDLE"
            }
            replaceAttributes(
                where: isBundle,
                with: newValue.map { Attribute(name: "group", value: Group(semantics: "BUNDLE", mids: $0).attributeValue) })
        }
    }

    /// `a=ice-lite` (RFC 8839): the peer only answers checks, as SRS does.
    public var iceLite: Bool {
        get { hasAttribute("ice-lite") }
        set { setFlag("ice-lite", newValue) }
    }

    /// `a=msid-semantic:` value, e.g. "WMS" or "WMS *" (Chromium still sends it).
    public var msidSemantic: String? {
        get { value(of: "msid-semantic") }
        set { setValue(newValue, for: "msid-semantic") }
    }

    /// A media section's direction with the session-level flag as its default (RFC 8866 §6.7):
    /// its own flag, else the session's, else sendrecv.
    public func effectiveDirection(of section: MediaDescription) -> Direction {
        section.directionIfPresent ?? directionIfPresent ?? .sendrecv
    }

    /// The media section whose `a=mid` is `mid`.
    public func media(withMid mid: String) -> MediaDescription? {
        media.first { $0.mid == mid }
    }
}
