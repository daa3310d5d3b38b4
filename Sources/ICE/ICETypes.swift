import STUN

public enum ICERole: Sendable, Hashable {
    case controlling, controlled

    var opposite: ICERole { self == .controlling ? .controlled : .controlling }
}

/// W3C `RTCIceConnectionState` values.
public enum ICEConnectionState: String, Sendable {
    case new, checking, connected, completed, failed, disconnected, closed
}

/// Short-term credentials (RFC 8445 §5.3): ufrag ≥ 4 and pwd ≥ 22 ice-chars.
public struct ICECredentials: Sendable, Hashable {
    public var ufrag: String
    public var pwd: String

    public init(ufrag: String, pwd: String) {
        self.ufrag = ufrag
        self.pwd = pwd
    }

    static let iceChars = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    /// 8-character ufrag, 24-character pwd, from the system's secure random source.
    public static func random() -> ICECredentials {
        var rng = SystemRandomNumberGenerator()
        func make(_ n: Int) -> String {
            String((0..<n).map { _ in iceChars[Int.random(in: 0..<iceChars.count, using: &rng)] })
        }
        return ICECredentials(ufrag: make(8), pwd: make(24))
    }
}

public struct ICEConfiguration: Sendable {
    /// STUN servers used for server-reflexive candidates (full agents only).
    public var stunServers: [SocketAddress] = []
    /// ICE-lite (RFC 8445 §2.5): host candidates only, never sends checks, always controlled.
    public var lite = false
    /// Consent freshness request interval (RFC 7675), randomized 0.8–1.2×.
    public var consentInterval: Duration = .seconds(5)
    /// No consent (full) or no valid request (lite) for this long: `failed`.
    public var consentTimeout: Duration = .seconds(30)
    /// A consent request unanswered this long: `disconnected`.
    public var disconnectedTimeout: Duration = .seconds(5)
    /// Nothing received on the selected pair this long (no media, no STUN): `disconnected`
    /// (libwebrtc's receiving timeout); anything arriving again makes it `connected`.
    public var receivingTimeout: Duration = .seconds(3)
    /// Silent this long, a full agent sends consent requests every `probeInterval` instead of
    /// every `consentInterval`: a path that comes back, or a NAT that rebound our port (the
    /// peer learns the new one from a check), is found within one interval. An idle path (no
    /// media) is so probed about every 2 s, which keeps it from looking silent (libwebrtc pings
    /// a stable connection every 2.5 s). 0.1 s, as `checkInterval` (was 0.5, then 0.2): a NAT
    /// rebinding or a path's return is found within that; Chromium pings a weak connection
    /// every 48 ms.
    public var probeAfter: Duration = .seconds(2)
    public var probeInterval: Duration = .milliseconds(100)
    /// Lite: an authenticated check from a new address moves the selected pair there once the
    /// selected remote has been silent this long (NAT rebinding; RFC 8445 §7.3.1.1 leaves the
    /// lite side to follow its peer, which does not nominate again).
    public var rebindAfter: Duration = .seconds(1)
    /// Lite: authenticated media from a new address that has passed a check moves the path once
    /// the selected remote has been silent this long. Media there is the peer's own choice of
    /// path, a stronger sign than a check (a backup pair is checked, not sent media), so the
    /// wait is short: a packet that left on the old mapping as the new one took over (CI's
    /// proxy did this) kept the path on a dead port a whole `rebindAfter` (video back 1.24 s
    /// after a rebinding instead of ~0.1).
    public var rebindOnMediaAfter: Duration = .milliseconds(100)
    /// Lite: or once this many such packets came in a row with nothing from the selected remote
    /// since the first (a lone straggler on the old port no longer holds the path there for
    /// `rebindOnMediaAfter`; a selected remote still sending breaks the run, so two live paths
    /// do not flap packet by packet).
    public var rebindOnMediaPackets: Int = 3
    /// No pair selected this long after checking began: `failed`.
    public var checkingTimeout: Duration = .seconds(30)
    /// Pacing: at most one new STUN request per Ta (RFC 8445 §14.2).
    public var pacingInterval: Duration = .milliseconds(50)
    /// Initial retransmission timeout of a consent or server-reflexive request; doubles per try
    /// up to `maxCheckRTO`.
    public var checkRTO: Duration = .milliseconds(500)
    public var maxCheckRTO: Duration = .seconds(8)
    /// An unanswered connectivity check is repeated every `checkInterval`, or every 2·N·Ta when
    /// N pairs are still being checked (so repeats take at most half the pacer's slots), until
    /// `checkTimeout`. As Chromium, which pings a connection that is not yet writable every
    /// 48 ms: a path that appears (a reconnect attempt's while the network is still out) is found
    /// within ~0.1 s, where RFC 8489's doubling RTO (0.5, 1, 2, 4, 8 s) left seconds between tries.
    public var checkInterval: Duration = .milliseconds(100)
    /// A check unanswered this long fails its pair.
    public var checkTimeout: Duration = .seconds(30)
    /// Sends per server-reflexive query before that server is given up.
    public var maxGatherTries = 3
    /// Upper bound on the check list (RFC 8445 §6.1.2.5 suggests 100).
    public var maxPairs = 100
    /// Upper bound on remote candidates, signalled and learned: more are refused (signalled) or
    /// replace the oldest learned one (peer-reflexive), so a flood costs bounded work.
    public var maxRemoteCandidates = 64

    public init(stunServers: [SocketAddress] = [], lite: Bool = false) {
        self.stunServers = stunServers
        self.lite = lite
    }
}

/// A datagram the driver must send from the socket bound to `local`.
public struct ICETransmit: Sendable, Equatable {
    public var local: SocketAddress
    public var remote: SocketAddress
    public var bytes: [UInt8]

    public init(local: SocketAddress, remote: SocketAddress, bytes: [UInt8]) {
        self.local = local
        self.remote = remote
        self.bytes = bytes
    }
}

public enum ICEEvent: Sendable, Equatable {
    /// Signal this to the peer (trickle). Peer-reflexive local candidates are never signalled.
    case localCandidate(Candidate)
    /// A signalled local candidate is gone (its base was removed): withdraw it from the peer.
    case localCandidateRemoved(Candidate)
    case gatheringComplete
    case stateChanged(ICEConnectionState)
    /// Media should now flow between these addresses (local is the socket to send from).
    case selectedPairChanged(local: SocketAddress, remote: SocketAddress)
    case roleChanged(ICERole)
}
