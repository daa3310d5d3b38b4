// A joined view of one RTP payload format: the m= format, its rtpmap, fmtp and rtcp-fb lines.

/// One codec of an m= section, as JSEP negotiates them.
public struct Codec: Sendable, Equatable {
    public var payloadType: UInt8
    public var name: String
    public var clockRate: Int
    public var channels: Int?
    /// The fmtp parameter text, e.g. "minptime=10;useinbandfec=1".
    public var fmtp: String?
    /// The rtcp-fb entries that apply to this payload type (its own and the "*" ones).
    public var feedback: [RTCPFeedback]

    public init(
        payloadType: UInt8, name: String, clockRate: Int, channels: Int? = nil,
        fmtp: String? = nil, feedback: [RTCPFeedback] = []
    ) {
        self.payloadType = payloadType
        self.name = name
        self.clockRate = clockRate
        self.channels = channels
        self.fmtp = fmtp
        self.feedback = feedback
    }

    /// `fmtp` split into ordered `name=value` pairs.
    public var parameters: [FormatParameter] { fmtp.map(FormatParameter.parse) ?? [] }

    public var rtpMap: RTPMap {
        RTPMap(payloadType: payloadType, encodingName: name, clockRate: clockRate, channels: channels)
    }

    /// The static payload types of RFC 3551 that may appear without an rtpmap.
    static func staticPayload(_ payloadType: UInt8) -> RTPMap? {
        switch payloadType {
        case 0: RTPMap(payloadType: 0, encodingName: "PCMU", clockRate: 8000, channels: 1)
        case 3: RTPMap(payloadType: 3, encodingName: "GSM", clockRate: 8000, channels: 1)
        case 4: RTPMap(payloadType: 4, encodingName: "G723", clockRate: 8000, channels: 1)
        case 8: RTPMap(payloadType: 8, encodingName: "PCMA", clockRate: 8000, channels: 1)
        case 9: RTPMap(payloadType: 9, encodingName: "G722", clockRate: 8000, channels: 1)
        case 13: RTPMap(payloadType: 13, encodingName: "CN", clockRate: 8000, channels: 1)
        case 18: RTPMap(payloadType: 18, encodingName: "G729", clockRate: 8000, channels: 1)
        case 26: RTPMap(payloadType: 26, encodingName: "JPEG", clockRate: 90000)
        case 31: RTPMap(payloadType: 31, encodingName: "H261", clockRate: 90000)
        case 34: RTPMap(payloadType: 34, encodingName: "H263", clockRate: 90000)
        default: nil
        }
    }
}

extension MediaDescription {
    /// The formats of the m= line that are RTP payload types with an rtpmap (or a static RFC 3551
    /// type), in m= line order, joined with their fmtp and rtcp-fb lines.
    public var codecs: [Codec] {
        let maps = rtpMaps
        let parameters = fmtp
        let feedback = rtcpFeedback
        return formats.compactMap { format in
            guard let payloadType = try? parsePayloadType(Substring(format), in: "m="),
                let map = maps.first(where: { $0.payloadType == payloadType }) ?? Codec.staticPayload(payloadType)
            else { return nil }
            return Codec(
                payloadType: payloadType, name: map.encodingName, clockRate: map.clockRate, channels: map.channels,
                fmtp: parameters[payloadType], feedback: feedback.filter { $0.applies(to: payloadType) })
        }
    }

    /// Replaces the formats and every rtpmap, fmtp and rtcp-fb line with `codecs`, written per
    /// codec in the order Chromium uses (rtpmap, rtcp-fb, fmtp) where the first old line was.
    /// Feedback is written for the codec's own payload type.
    public mutating func setCodecs(_ codecs: [Codec]) {
        formats = codecs.map { String($0.payloadType) }
        var lines: [Attribute] = []
        for codec in codecs {
            lines.append(Attribute(name: "rtpmap", value: codec.rtpMap.attributeValue))
            var written: [RTCPFeedback] = []
            for item in codec.feedback {
                let own = RTCPFeedback(payloadType: String(codec.payloadType), type: item.type, parameter: item.parameter)
                guard !written.contains(own) else { continue }
                written.append(own)
                lines.append(Attribute(name: "rtcp-fb", value: own.attributeValue))
            }
            if let fmtp = codec.fmtp {
                lines.append(Attribute(name: "fmtp", value: "\(codec.payloadType) \(fmtp)"))
            }
        }
        replaceAttributes(where: { ["rtpmap", "fmtp", "rtcp-fb"].contains($0.name) }, with: lines)
    }
}
