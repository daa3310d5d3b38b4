// Writes a description in RFC 8866 §5 field order with CRLF line endings.

extension SessionDescription {
    /// The description as SDP text, CRLF line endings, fields in RFC 8866 order
    /// (v o s i u e p c b t r z k a, then each m i c b k a). A description with no `t=` gets
    /// `t=0 0`, since the line is required.
    public func serialize() -> String {
        var out = ""
        func line(_ type: String, _ value: String) {
            out += type
            out += "="
            out += value
            out += "\r\n"
        }
        line("v", String(version))
        line("o", origin.line)
        line("s", sessionName)
        if let information { line("i", information) }
        if let uri { line("u", uri) }
        for email in emails { line("e", email) }
        for phone in phones { line("p", phone) }
        if let connection { line("c", connection.line) }
        for bandwidth in bandwidths { line("b", bandwidth.line) }
        for time in timing.isEmpty ? [Timing()] : timing {
            line("t", time.line)
            for repeatTime in time.repeats { line("r", repeatTime) }
        }
        if let timeZones { line("z", timeZones) }
        if let encryptionKey { line("k", encryptionKey) }
        for attribute in attributes { line("a", attribute.description) }
        for section in media {
            line("m", section.mediaLine)
            if let information = section.information { line("i", information) }
            if let connection = section.connection { line("c", connection.line) }
            for bandwidth in section.bandwidths { line("b", bandwidth.line) }
            if let encryptionKey = section.encryptionKey { line("k", encryptionKey) }
            for attribute in section.attributes { line("a", attribute.description) }
        }
        return out
    }
}

extension SessionDescription: CustomStringConvertible {
    public var description: String { serialize() }
}

extension MediaDescription {
    /// The value of the `m=` line.
    var mediaLine: String {
        var text = "\(kind) \(port)"
        if let portCount { text += "/\(portCount)" }
        text += " \(proto)"
        for format in formats { text += " \(format)" }
        return text
    }
}
