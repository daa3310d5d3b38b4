import RTP

/// One negotiated RTP header extension (W3C `RTCRtpHeaderExtensionParameters`): its URI and the
/// id it has on the wire for this m-line.
public struct RtpHeaderExtensionParameters: Sendable, Hashable {
    public var uri: String
    public var id: UInt8

    public init(uri: String, id: UInt8) {
        self.uri = uri
        self.id = id
    }
}

/// The header extensions we offer and accept, per media kind.
enum HeaderExtensionPolicy {
    /// What an offer of ours lists for `kind`, with the ids Chromium uses (1 for mid, 3 for
    /// transport-wide sequence numbers, 13 for video orientation, 10 and 11 for the stream ids
    /// of a simulcast we send, 2 for abs-send-time) unless one is taken, then the next free
    /// one-byte id. Abs-send-time only on video we only receive: a sender without transport-cc
    /// (a relay's players, aiortc) stamps it and our REMB estimates from it instead of from the
    /// RTP timestamps, which carry the original sender's capture and encoding jitter; our own
    /// encoders' packets do not carry it, so an m-line that sends does not offer it.
    static func offered(for kind: MediaKind, simulcast: Bool = false, sends: Bool = true) -> [(id: Int, uri: String)] {
        var wanted: [(id: Int, uri: String)] = [(1, RTPExtensionURI.sdesMID), (3, RTPExtensionURI.transportWideCC)]
        if kind == .video { wanted.append((13, RTPExtensionURI.videoOrientation)) }
        if kind == .video, !sends { wanted.append((2, RTPExtensionURI.absSendTime)) }
        if kind == .video, simulcast {
            wanted += [(10, RTPExtensionURI.rtpStreamID), (11, RTPExtensionURI.repairedRTPStreamID)]
        }
        var used = Set<Int>()
        return wanted.map { w in
            var id = w.id
            while used.contains(id) { id = id % 14 + 1 }
            used.insert(id)
            return (id, w.uri)
        }
    }

    /// Whether we accept `uri`, offered in an m-line of `kind`, in our answer; the stream ids
    /// (RFC 8852) only where we receive simulcast; abs-send-time only where the configuration
    /// asks for it (`Configuration.absSendTime`, checked by the answer).
    static func accepts(_ uri: String, kind: String, simulcast: Bool = false) -> Bool {
        uri == RTPExtensionURI.sdesMID || uri == RTPExtensionURI.transportWideCC
            || (kind == "video" && (uri == RTPExtensionURI.videoOrientation || uri == RTPExtensionURI.absSendTime))
            || (simulcast && kind == "video" && (uri == RTPExtensionURI.rtpStreamID || uri == RTPExtensionURI.repairedRTPStreamID))
    }
}

extension Array where Element == RtpHeaderExtensionParameters {
    /// The id negotiated for `uri`, if any.
    func id(for uri: String) -> UInt8? { first { $0.uri == uri }?.id }
}
