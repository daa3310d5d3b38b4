// Typed accessors for the attributes of one m= section.

extension MediaDescription {
    /// `a=mid` (RFC 9143)
    public var mid: String? {
        get { value(of: "mid") }
        set { setValue(newValue, for: "mid") }
    }

    /// `a=bundle-only` (RFC 9143): the section is only usable inside its BUNDLE group.
    public var bundleOnly: Bool {
        get { hasAttribute("bundle-only") }
        set { setFlag("bundle-only", newValue) }
    }

    /// `a=rtcp-mux` (RFC 5761)
    public var rtcpMux: Bool {
        get { hasAttribute("rtcp-mux") }
        set { setFlag("rtcp-mux", newValue) }
    }

    /// `a=rtcp-rsize` (RFC 5506)
    public var rtcpRsize: Bool {
        get { hasAttribute("rtcp-rsize") }
        set { setFlag("rtcp-rsize", newValue) }
    }

    /// Every `a=rid` (RFC 8851), in order.
    public var rids: [RID] {
        get { decoded("rid", RID.parse) }
        set { replaceAttributes(named: "rid", with: newValue.map(\.attributeValue)) }
    }

    /// `a=simulcast` (RFC 8853).
    public var simulcast: Simulcast? {
        get { decoded("simulcast", Simulcast.parse).first }
        set { setValue(newValue?.attributeValue, for: "simulcast") }
    }

    /// Every `a=rtpmap`, in order.
    public var rtpMaps: [RTPMap] {
        get { decoded("rtpmap", RTPMap.parse) }
        set { replaceAttributes(named: "rtpmap", with: newValue.map(\.attributeValue)) }
    }

    /// The `a=rtpmap` for `payloadType`.
    public func rtpMap(for payloadType: UInt8) -> RTPMap? {
        rtpMaps.first { $0.payloadType == payloadType }
    }

    /// `a=fmtp` lines with a numeric format: payload type → parameter text (the first line wins
    /// if one is repeated). Setting edits lines in place, drops payload types not in the new
    /// value and appends new ones in `formats` order; non-numeric fmtp formats are left alone.
    public var fmtp: [UInt8: String] {
        get {
            var result: [UInt8: String] = [:]
            for (format, parameters) in decoded("fmtp", Attribute.parseFMTP) {
                guard let payloadType = try? parsePayloadType(format, in: "fmtp") else { continue }
                if result[payloadType] == nil { result[payloadType] = parameters }
            }
            return result
        }
        set {
            var remaining = newValue
            var kept: [Attribute] = []
            for attribute in attributes {
                guard attribute.name == "fmtp", let payloadType = Self.fmtpPayloadType(attribute) else {
                    kept.append(attribute)
                    continue
                }
                if let parameters = remaining.removeValue(forKey: payloadType) {
                    kept.append(Attribute(name: "fmtp", value: "\(payloadType) \(parameters)"))
                }
            }
            let order = formats.compactMap { try? parsePayloadType(Substring($0), in: "fmtp") }
            let ordered = order.filter { remaining[$0] != nil } + remaining.keys.filter { !order.contains($0) }.sorted()
            var added: Set<UInt8> = []
            for payloadType in ordered where added.insert(payloadType).inserted {
                if let parameters = remaining[payloadType] {
                    kept.append(Attribute(name: "fmtp", value: "\(payloadType) \(parameters)"))
                }
            }
            attributes = kept
        }
    }

    /// The fmtp parameter text for `payloadType`.
    public func fmtp(for payloadType: UInt8) -> String? {
        fmtp[payloadType]
    }

    /// The fmtp parameters for `payloadType` as ordered `name=value` pairs (empty when none).
    public func formatParameters(for payloadType: UInt8) -> [FormatParameter] {
        fmtp(for: payloadType).map(FormatParameter.parse) ?? []
    }

    /// Sets (or with nil removes) the fmtp line of one payload type.
    public mutating func setFMTP(_ parameters: String?, for payloadType: UInt8) {
        var all = fmtp
        all[payloadType] = parameters
        fmtp = all
    }

    private static func fmtpPayloadType(_ attribute: Attribute) -> UInt8? {
        guard let value = attribute.value, let (format, _) = try? Attribute.parseFMTP(Substring(value)) else { return nil }
        return try? parsePayloadType(format, in: "fmtp")
    }

    /// Every `a=rtcp-fb`, in order.
    public var rtcpFeedback: [RTCPFeedback] {
        get { decoded("rtcp-fb", RTCPFeedback.parse) }
        set { replaceAttributes(named: "rtcp-fb", with: newValue.map(\.attributeValue)) }
    }

    /// Every `a=ssrc`, in order.
    public var ssrcs: [SSRCAttribute] {
        get { decoded("ssrc", SSRCAttribute.parse) }
        set { replaceAttributes(named: "ssrc", with: newValue.map(\.attributeValue)) }
    }

    /// The distinct SSRC numbers named by `a=ssrc` lines, in first-seen order.
    public var ssrcNumbers: [UInt32] {
        var seen: Set<UInt32> = []
        return ssrcs.compactMap { seen.insert($0.ssrc).inserted ? $0.ssrc : nil }
    }

    /// Every `a=ssrc-group`, in order.
    public var ssrcGroups: [SSRCGroup] {
        get { decoded("ssrc-group", SSRCGroup.parse) }
        set { replaceAttributes(named: "ssrc-group", with: newValue.map(\.attributeValue)) }
    }

    /// Every `a=msid` (RFC 8830), in order.
    public var msids: [MSID] {
        get { decoded("msid", MSID.parse) }
        set { replaceAttributes(named: "msid", with: newValue.map(\.attributeValue)) }
    }

    /// The first `a=msid`; setting replaces them all.
    public var msid: MSID? {
        get { msids.first }
        set { msids = newValue.map { [$0] } ?? [] }
    }

    /// The `a=candidate` lines as the text after `a=`, e.g.
    /// "candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host" (the ICE target owns the grammar).
    /// Setting accepts the text with or without the "candidate:" prefix.
    public var candidates: [String] {
        get { attributes(named: "candidate").map(\.description) }
        set {
            let prefix = "candidate:"
            replaceAttributes(
                named: "candidate",
                with: newValue.map { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : $0 })
        }
    }

    /// Appends one candidate (with or without the "candidate:" prefix).
    public mutating func addCandidate(_ candidate: String) {
        candidates.append(candidate)
    }

    /// `a=sctp-port` (RFC 8841)
    public var sctpPort: Int? {
        get { value(of: "sctp-port").flatMap { parseInt(trimmed($0), in: 0...65535) } }
        set { setValue(newValue.map(String.init), for: "sctp-port") }
    }

    /// `a=max-message-size` (RFC 8841); 0 means no limit.
    public var maxMessageSize: Int? {
        get { value(of: "max-message-size").flatMap { parseInt(trimmed($0)) } }
        set { setValue(newValue.map(String.init), for: "max-message-size") }
    }
}
