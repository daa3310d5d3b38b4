import DTLS
import ICE
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

    /// The agent's state under its W3C name.
    package init(_ state: ICEConnectionState) {
        switch state {
        case .new: self = .new
        case .checking: self = .checking
        case .connected: self = .connected
        case .completed: self = .completed
        case .failed: self = .failed
        case .disconnected: self = .disconnected
        case .closed: self = .closed
        }
    }
}

/// W3C `RTCDtlsTransportState`: where the DTLS handshake and the connection over it are.
public enum DtlsTransportState: String, Sendable {
    case new, connecting, connected, closed, failed

    /// The DTLS machine's state under its W3C name.
    package init(_ state: DTLSState) {
        switch state {
        case .new: self = .new
        case .connecting: self = .connecting
        case .connected: self = .connected
        case .closed: self = .closed
        case .failed: self = .failed
        }
    }
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

/// What a PeerConnection reports, on its `events` stream and to its `delegate` (one method each).
public enum PeerConnectionEvent: Sendable {
    case iceCandidate(IceCandidate)
    /// Local candidates withdrawn: their interface address went away (continual gathering).
    /// Not in W3C; libwebrtc's `OnIceCandidatesRemoved`. An app may tell the peer; an ICE
    /// restart (asked for when the selected pair used them) replaces them anyway.
    case iceCandidatesRemoved([IceCandidate])
    case iceGatheringStateChanged(IceGatheringState)
    case iceConnectionStateChanged(IceConnectionState)
    case connectionStateChanged(PeerConnectionState)
    case signalingStateChanged(SignalingState)
    /// W3C `selectedcandidatepairchange`: media now goes over this pair (local and remote
    /// address), e.g. after a NAT rebinding moved the peer (`selectedCandidatePair`).
    case selectedCandidatePairChanged(local: String, remote: String)
    /// The peer opened a data channel (W3C `datachannel`); it is open already.
    case dataChannel(DataChannel)
    /// W3C `negotiationneeded`: local changes wait for an offer (fired in `stable`, coalesced).
    case negotiationNeeded
    /// W3C `track`: the peer started sending on this transceiver (its receiver has the track).
    case track(RtpTransceiver)
    /// Something went wrong in the background (DTLS or TURN failed, an ICE server cannot be
    /// used, SCTP trouble); the connection may go on.
    case error(PeerConnectionError)
}

/// What went wrong in a PeerConnection call, or in the background (an `error` event): a `kind` an
/// app can switch on, and the message that names the call and the reason, as it is logged and
/// shown (`description`). The kinds follow the W3C exceptions they stand for.
public struct PeerConnectionError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// The call does not fit the current state (W3C `InvalidStateError`): a description of
        /// the wrong type for the signaling state, a rollback with nothing to roll back,
        /// `createAnswer` without a remote offer, `send` on a data channel still connecting.
        case invalidState
        /// The connection, or the data channel, is closed (or closing): nothing more will happen
        /// on it (W3C `InvalidStateError` on a closed object).
        case closed
        /// A session description that does not parse or does not fit the session (W3C
        /// `RTCError` `sdp-syntax-error`, `InvalidAccessError`, `InvalidModificationError`):
        /// `line` names the SDP line when one line is at fault.
        case invalidDescription
        /// A trickled candidate that does not parse, or names no m-line of the remote
        /// description (W3C `OperationError`).
        case invalidCandidate
        /// An argument or configuration value the call does not take (W3C `TypeError`,
        /// `RangeError`, `SyntaxError`, `InvalidAccessError`): ICE server URLs, data channel
        /// options, send parameters, a sender of another connection.
        case invalidArgument
        /// More than a limit allows: remote candidates per connection, a message over the peer's
        /// max-message-size (W3C `OperationError`, `TypeError`).
        case limitExceeded
        /// Well-formed, but not implemented here (W3C `NotSupportedError`): a media transport
        /// other than UDP/TLS/RTP/SAVPF, more than one encoding, `stuns:` servers.
        case unsupported
        /// The network side failed: sockets, ICE, DTLS, TURN or SCTP (W3C `RTCError`
        /// `dtls-failure`, `sctp-failure`); `waitConnected` after the connection failed.
        case transport
        /// `waitConnected` gave up before the connection was connected.
        case timeout
    }

    public let kind: Kind
    /// What was wrong and where, e.g. `setRemoteDescription: SDP line 5: …` (also `description`).
    public let message: String
    /// The 1-based SDP line an `.invalidDescription` is about, when one line is at fault.
    public let line: Int?

    public init(_ kind: Kind, _ message: String, line: Int? = nil) {
        self.kind = kind
        self.message = message
        self.line = line
    }

    public var description: String { message }
}

/// The line an SDP parse error points at (nil when the whole text is at fault).
func sdpLine(of error: any Error) -> Int? {
    guard let error = error as? SDPError, error.line > 0 else { return nil }
    return error.line
}

/// Whose preference orders the codecs of an answer.
public enum CodecOrder: Sendable {
    case offerer, local
    /// The offerer's order between codecs (a peer may encode only its first choice, VP8 or
    /// H.264), ours among one codec's formats, which one encoder produces alike (a relay answering
    /// a publisher: the H.264 profile it sends decides which players can take it).
    case offererCodecsLocalFormats
}
