// Parse-time checks for the attributes this module gives typed access to, so a description that
// parsed never hides a malformed rtpmap or fingerprint behind an accessor that silently skips it.
// Attributes we do not know are kept verbatim and not checked (RFC 8866 §5.13).

extension Attribute {
    func validate() throws(ValueError) {
        switch name {
        case "rtpmap": _ = try RTPMap.parse(requiredValue())
        case "fmtp": _ = try Self.parseFMTP(requiredValue())
        case "rtcp-fb": _ = try RTCPFeedback.parse(requiredValue())
        case "extmap": _ = try ExtMap.parse(requiredValue())
        case "ssrc": _ = try SSRCAttribute.parse(requiredValue())
        case "ssrc-group": _ = try SSRCGroup.parse(requiredValue())
        case "msid": _ = try MSID.parse(requiredValue())
        case "group": _ = try Group.parse(requiredValue())
        case "rid": _ = try RID.parse(requiredValue())
        case "simulcast": _ = try Simulcast.parse(requiredValue())
        case "fingerprint": _ = try Fingerprint.parse(requiredValue())
        case "setup":
            let role = try requiredValue()
            guard SetupRole(rawValue: String(trimmed(role))) != nil else {
                throw ValueError("setup \(quoted(role)) is not actpass, active, passive or holdconn")
            }
        case "sctp-port":
            let port = try requiredValue()
            guard parseInt(trimmed(port), in: 0...65535) != nil else {
                throw ValueError("sctp-port \(quoted(port)) is not a port number")
            }
        case "max-message-size":
            let size = try requiredValue()
            guard parseInt(trimmed(size)) != nil else {
                throw ValueError("max-message-size \(quoted(size)) is not a number")
            }
        case "mid", "ice-ufrag", "ice-pwd", "ice-options", "candidate":
            _ = try requiredValue()
        default:
            break
        }
    }

    /// The value of an attribute whose grammar needs one; "a=mid" or "a=mid:" is an error.
    private func requiredValue() throws(ValueError) -> Substring {
        guard let value, !trimmed(value).isEmpty else { throw ValueError("a=\(name) needs a value") }
        return Substring(value)
    }

    /// `a=fmtp:<format> <parameters>`: the format is a payload type for RTP media, but other
    /// transports may name a format token, so only numbers are range-checked.
    static func parseFMTP(_ value: Substring) throws(ValueError) -> (format: Substring, parameters: String) {
        let (format, rest) = splitOnce(trimmed(value), at: UInt8(ascii: " "))
        if isDecimal(format) { _ = try parsePayloadType(format, in: "fmtp") }
        return (format, String(trimmed(rest ?? "")))
    }
}
