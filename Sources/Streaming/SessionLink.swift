import PeerConnection
import SDP
import Signaling
import Locks

/// One connection of a `StreamingSession` and its signaling: the PeerConnection, the server's
/// session resource (WHIP/WHEP) with its trickle/restart channel, and what recovery keeps of it.
final class SessionLink: Sendable {
    let pc: PeerConnection
    /// WHIP/WHEP trickle and ICE restart (nil for SRS's API).
    let ice: WHIPIceChannel?
    let whipSession = Locked<WHIPClient.Session?>(nil)
    private let flags = Locked(Flags())

    private struct Flags {
        var negotiated = false
        /// A `wantsIceRestart` check is under way.
        var checkingRestart = false
        /// Asked for while one was under way: check again when it ends.
        var recheckRestart = false
        /// The send-side bandwidth estimate when trouble began (bits/s).
        var estimate: Int?
    }

    init(pc: PeerConnection, ice: WHIPIceChannel?) {
        self.pc = pc
        self.ice = ice
    }

    /// The answer has been applied: later `negotiationneeded` events are the connection's own.
    var negotiated: Bool {
        get { flags.withLock { $0.negotiated } }
        set { flags.withLock { $0.negotiated = newValue } }
    }

    var estimate: Int? { flags.withLock { $0.estimate } }

    /// Whether a `wantsIceRestart` check may start (one at a time; one asked for meanwhile is
    /// remembered, see `endRestartCheck`).
    func beginRestartCheck() -> Bool {
        flags.withLock { f in
            guard !f.checkingRestart else {
                f.recheckRestart = true
                return false
            }
            f.checkingRestart = true
            return true
        }
    }

    /// Ends a check; true: another was asked for while it ran, and it continues as that one.
    func endRestartCheck() -> Bool {
        flags.withLock { f in
            guard f.recheckRestart else {
                f.checkingRestart = false
                return false
            }
            f.recheckRestart = false
            return true
        }
    }

    /// Keeps the send-side estimate as it is now for a successor, unless one was kept already:
    /// the first sign of trouble (an ICE restart, the connection's end) comes before the estimate
    /// has collapsed. `refresh` (each `disconnected`): replaces an earlier sample; a connection
    /// that fails later has no selected pair, hence no estimate, and keeps this one.
    func sampleEstimate(refresh: Bool = false) async {
        guard refresh || estimate == nil else { return }
        let report = await pc.getStats()
        guard let bitrate = report.ofType("candidate-pair").compactMap({ $0.int("availableOutgoingBitrate") }).max()
        else { return }
        flags.withLock { if refresh || $0.estimate == nil { $0.estimate = bitrate } }
    }

    /// Whether the connection's next offer would restart ICE (it called `restartIce()`), other
    /// than with credentials the server refused already.
    func wantsIceRestart() async -> Bool {
        guard let offer = try? await pc.createOffer(), let local = pc.localDescription else { return false }
        let next = Self.ufrag(offer.sdp)
        return next != Self.ufrag(local.sdp) && next != ice?.refusedUfrag
    }

    /// The sender settings the app made (bitrate limits, frame rate, degradation) on the new
    /// connection's senders of the same kinds.
    func copySendParameters(to link: SessionLink) {
        for old in pc.transceivers {
            guard let new = link.pc.transceivers.first(where: { $0.kind == old.kind }) else { continue }
            try? new.sender.setParameters(old.sender.parameters)   // valid: the old sender took them
        }
    }

    private static func ufrag(_ sdp: String) -> String? {
        guard let parsed = try? SDP.SessionDescription(parsing: sdp) else { return nil }
        return parsed.media.first?.iceUfrag ?? parsed.iceUfrag
    }
}
