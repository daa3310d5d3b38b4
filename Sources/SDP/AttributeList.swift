// Generic lookup and editing over an ordered list of a= lines, shared by the session and the media
// level. Edits keep the position of the lines they replace, so unrelated lines keep their order.

/// Something that carries `a=` lines: `SessionDescription` and `MediaDescription`.
public protocol AttributeContainer {
    var attributes: [Attribute] { get set }
}

extension SessionDescription: AttributeContainer {}
extension MediaDescription: AttributeContainer {}

extension AttributeContainer {
    /// The first attribute called `name`.
    public func attribute(named name: String) -> Attribute? {
        attributes.first { $0.name == name }
    }

    /// Every attribute called `name`, in order.
    public func attributes(named name: String) -> [Attribute] {
        attributes.filter { $0.name == name }
    }

    /// The value of the first `a=name:value`; nil when absent or a flag.
    public func value(of name: String) -> String? {
        attribute(named: name)?.value
    }

    /// The values of every `a=name:value`, in order (flags skipped).
    public func values(of name: String) -> [String] {
        attributes.compactMap { $0.name == name ? $0.value : nil }
    }

    /// Whether any `a=name` or `a=name:…` is present.
    public func hasAttribute(_ name: String) -> Bool {
        attributes.contains { $0.name == name }
    }

    /// Appends `a=name[:value]`.
    public mutating func addAttribute(_ name: String, _ value: String? = nil) {
        attributes.append(Attribute(name: name, value: value))
    }

    /// Removes every attribute called `name`.
    public mutating func removeAttributes(named name: String) {
        attributes.removeAll { $0.name == name }
    }

    /// Sets a single-valued attribute: replaces the first `a=name` in place and drops any others;
    /// appends when absent; nil removes it.
    public mutating func setValue(_ value: String?, for name: String) {
        replaceAttributes(named: name, with: value.map { [$0] } ?? [])
    }

    /// Adds (once) or removes a flag attribute such as `a=rtcp-mux`.
    public mutating func setFlag(_ name: String, _ present: Bool) {
        if present {
            if !hasAttribute(name) { attributes.append(Attribute(name: name)) }
        } else {
            removeAttributes(named: name)
        }
    }

    /// Replaces every `a=name` with one line per value, placed where the first old one was
    /// (or appended when there was none).
    public mutating func replaceAttributes(named name: String, with values: [String]) {
        replaceAttributes(where: { $0.name == name }, with: values.map { Attribute(name: name, value: $0) })
    }

    /// Replaces every attribute matching `predicate` with `replacement`, placed where the first
    /// match was (or appended when nothing matched).
    public mutating func replaceAttributes(where predicate: (Attribute) -> Bool, with replacement: [Attribute]) {
        let position = attributes.firstIndex(where: predicate)
        attributes.removeAll(where: predicate)
        if let position {
            // Removals can only happen at or after the first match, so `position` is still valid.
            attributes.insert(contentsOf: replacement, at: position)
        } else {
            attributes.append(contentsOf: replacement)
        }
    }

    /// Decodes every `a=name:value` with `decode`, skipping values it rejects (a parsed
    /// description has none: the parser checked them).
    func decoded<T>(_ name: String, _ decode: (Substring) throws(ValueError) -> T) -> [T] {
        attributes.compactMap { attribute in
            guard attribute.name == name, let value = attribute.value else { return nil }
            return try? decode(Substring(value))
        }
    }
}
