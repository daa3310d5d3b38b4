import SDP

/// offer / answer / pranswer / rollback, as in W3C `RTCSdpType`.
public enum SdpType: String, Sendable {
    case offer, answer, pranswer, rollback
}

/// A description as exchanged with the remote side (W3C `RTCSessionDescription`).
public struct SessionDescription: Sendable, Equatable {
    public var type: SdpType
    public var sdp: String
    public init(type: SdpType, sdp: String) {
        self.type = type
        self.sdp = sdp
    }
}

/// A remote or local ICE candidate as the W3C API passes it around.
public struct IceCandidate: Sendable, Equatable {
    /// "candidate:…" (without "a="); empty string means end of candidates.
    public var candidate: String
    public var sdpMid: String?
    public var sdpMLineIndex: Int?
    public init(candidate: String, sdpMid: String? = nil, sdpMLineIndex: Int? = nil) {
        self.candidate = candidate
        self.sdpMid = sdpMid
        self.sdpMLineIndex = sdpMLineIndex
    }
}

public enum MediaKind: String, Sendable {
    case audio, video
}

/// W3C `RTCRtpTransceiverDirection`.
public enum TransceiverDirection: String, Sendable {
    case sendrecv, sendonly, recvonly, inactive

    public var sends: Bool { self == .sendrecv || self == .sendonly }
    public var receives: Bool { self == .sendrecv || self == .recvonly }

    init(sends: Bool, receives: Bool) {
        switch (sends, receives) {
        case (true, true): self = .sendrecv
        case (true, false): self = .sendonly
        case (false, true): self = .recvonly
        case (false, false): self = .inactive
        }
    }

    /// What the other side's direction means from our side.
    var reversed: TransceiverDirection { TransceiverDirection(sends: receives, receives: sends) }

    func intersection(_ other: TransceiverDirection) -> TransceiverDirection {
        TransceiverDirection(sends: sends && other.sends, receives: receives && other.receives)
    }
}

/// W3C `RTCPeerConnectionState`.
public enum PeerConnectionState: String, Sendable {
    case new, connecting, connected, disconnected, failed, closed
}

/// W3C `RTCIceConnectionState`.
public enum IceConnectionState: String, Sendable {
    case new, checking, connected, completed, failed, disconnected, closed
}

/// W3C `RTCIceGatheringState`.
public enum IceGatheringState: String, Sendable {
    case new, gathering, complete
}

/// W3C `RTCSignalingState`.
public enum SignalingState: String, Sendable {
    case stable, haveLocalOffer = "have-local-offer", haveRemoteOffer = "have-remote-offer", closed
}

public enum BundlePolicy: String, Sendable {
    case balanced, maxCompat = "max-compat", maxBundle = "max-bundle"
}

/// W3C `RTCIceServer`: `stun:` and `turn:` URLs over UDP (RFC 7064/7065); `turn:` needs `username` and `credential`.
public struct IceServer: Sendable, Equatable {
    public var urls: [String]
    public var username: String?
    public var credential: String?
    /// Not W3C: CA certificates (a PEM file) trusted for this server's `turns:` URLs besides the
    /// system store, e.g. a test or private CA. The certificate must still name the URL's host.
    public var tlsCAFile: String?
    public init(urls: [String], username: String? = nil, credential: String? = nil, tlsCAFile: String? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
        self.tlsCAFile = tlsCAFile
    }
}

/// What a PeerConnection reports; also delivered through its `events` stream.
public enum PeerConnectionEvent: Sendable {
    case iceCandidate(IceCandidate)
    case iceGatheringStateChanged(IceGatheringState)
    case iceConnectionStateChanged(IceConnectionState)
    case connectionStateChanged(PeerConnectionState)
    case signalingStateChanged(SignalingState)
    /// The peer opened a data channel (W3C `datachannel`); it is open already.
    case dataChannel(DataChannel)
    /// W3C `negotiationneeded`: local changes wait for an offer (fired in `stable`, coalesced).
    case negotiationNeeded
    /// W3C `track`: the peer started sending on this transceiver (its receiver has the track).
    case track(RtpTransceiver)
    case error(String)
}

public struct PeerConnectionError: Error, CustomStringConvertible, Sendable, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Whose preference orders the codecs of an answer.
public enum CodecOrder: Sendable {
    case offerer, local
    /// The offerer's order between codecs (a peer may encode only its first choice, VP8 or
    /// H.264), ours among one codec's formats, which one encoder produces alike (a relay answering
    /// a publisher: the H.264 profile it sends decides which players can take it).
    case offererCodecsLocalFormats
}
