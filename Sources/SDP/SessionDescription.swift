/// An SDP session description (RFC 8866) as plain values. Parse with `init(parsing:)`, edit the
/// fields or the typed accessors, write with `serialize()`.
public struct SessionDescription: Sendable, Equatable {
    /// `v=`: always 0.
    public var version: Int
    /// `o=`
    public var origin: Origin
    /// `s=`: WebRTC sends "-".
    public var sessionName: String
    /// `i=`
    public var information: String?
    /// `u=`
    public var uri: String?
    /// `e=` lines.
    public var emails: [String]
    /// `p=` lines.
    public var phones: [String]
    /// Session-level `c=`.
    public var connection: Connection?
    /// Session-level `b=` lines.
    public var bandwidths: [Bandwidth]
    /// `t=` lines, each with its `r=` lines.
    public var timing: [Timing]
    /// `z=`, kept as raw text.
    public var timeZones: String?
    /// `k=` (obsolete, kept so old descriptions round-trip).
    public var encryptionKey: String?
    /// Session-level `a=` lines, in order.
    public var attributes: [Attribute]
    /// The `m=` sections, in order.
    public var media: [MediaDescription]

    public init(
        version: Int = 0,
        origin: Origin = Origin(),
        sessionName: String = "-",
        information: String? = nil,
        uri: String? = nil,
        emails: [String] = [],
        phones: [String] = [],
        connection: Connection? = nil,
        bandwidths: [Bandwidth] = [],
        timing: [Timing] = [Timing()],
        timeZones: String? = nil,
        encryptionKey: String? = nil,
        attributes: [Attribute] = [],
        media: [MediaDescription] = []
    ) {
        self.version = version
        self.origin = origin
        self.sessionName = sessionName
        self.information = information
        self.uri = uri
        self.emails = emails
        self.phones = phones
        self.connection = connection
        self.bandwidths = bandwidths
        self.timing = timing
        self.timeZones = timeZones
        self.encryptionKey = encryptionKey
        self.attributes = attributes
        self.media = media
    }
}

/// One `m=` section and the lines under it.
public struct MediaDescription: Sendable, Equatable {
    /// "audio", "video", "application", …
    public var kind: String
    public var port: Int
    /// The `/<number of ports>` of the m= line, if present.
    public var portCount: Int?
    /// e.g. "UDP/TLS/RTP/SAVPF", "UDP/DTLS/SCTP".
    public var proto: String
    /// Payload type numbers as text, or "webrtc-datachannel".
    public var formats: [String]
    /// `i=`
    public var information: String?
    /// Media-level `c=`.
    public var connection: Connection?
    /// Media-level `b=` lines.
    public var bandwidths: [Bandwidth]
    /// `k=` (obsolete).
    public var encryptionKey: String?
    /// Media-level `a=` lines, in order.
    public var attributes: [Attribute]

    public init(
        kind: String,
        port: Int = 9,
        portCount: Int? = nil,
        proto: String = "UDP/TLS/RTP/SAVPF",
        formats: [String] = [],
        information: String? = nil,
        connection: Connection? = nil,
        bandwidths: [Bandwidth] = [],
        encryptionKey: String? = nil,
        attributes: [Attribute] = []
    ) {
        self.kind = kind
        self.port = port
        self.portCount = portCount
        self.proto = proto
        self.formats = formats
        self.information = information
        self.connection = connection
        self.bandwidths = bandwidths
        self.encryptionKey = encryptionKey
        self.attributes = attributes
    }
}
