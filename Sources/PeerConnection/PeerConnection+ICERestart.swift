import ICE
import SDP
import Transport

/// ICE restart (RFC 8445 §9, JSEP §3.5.1): new credentials in the next offer; DTLS and SRTP run
/// on, over whichever pair the new checks select.
extension PeerConnection {
    /// W3C `restartIce()`: the next offer carries new ICE credentials (`negotiationneeded` fires).
    /// An offer of ours already out with new credentials is that restart (W3C
    /// [[LocalIceCredentialsToReplace]]): asking again would restart the new generation the moment
    /// its answer lands, throwing away the checks that were about to succeed.
    public func restartIce() {
        loop.execute { [weak self] in
            guard let self, !closed else { return }
            if signalingState == .haveLocalOffer, let stable = negotiation.stableLocal.flatMap({ iceCredentials(of: $0.sdp) }),
               credentials != stable { return }
            iceRestartWanted = true
            updateNegotiationNeeded()
        }
    }

    /// The credentials of a description (BUNDLE: its first live m-line's, else the session's).
    func iceCredentials(of sdp: SDP.SessionDescription) -> ICECredentials? {
        let first = sdp.transportSection
        guard let ufrag = first?.iceUfrag ?? sdp.iceUfrag, let pwd = first?.icePwd ?? sdp.icePwd else { return nil }
        return ICECredentials(ufrag: ufrag, pwd: pwd)
    }

    /// Whether a remote offer carries credentials other than those the agent runs with.
    func remoteRestartsICE(_ offer: SDP.SessionDescription) -> Bool {
        guard remoteCredentialsSet, let agent = transport?.ice, let theirs = iceCredentials(of: offer) else { return false }
        return agent.remoteCredentials != nil && agent.remoteCredentials != theirs
    }

    /// Whether an answer to a remote restart takes new credentials too (JSEP §5.3.1). A lite
    /// agent on a shared port keeps its own unless that port can learn the new ufrag.
    func answerRestartsCredentials() -> Bool {
        !configuration.iceLite || transport?.io is UfragRoutedPacketIO
    }

    /// A local description with new credentials restarts our agent (loop thread).
    func applyLocalCredentials(_ sdp: SDP.SessionDescription) {
        guard let transport, let ours = iceCredentials(of: sdp), ours != credentials else { return }
        // The port learns the new ufrag before the peer can use it (from a new address too).
        (transport.io as? UfragRoutedPacketIO)?.route(ufrag: ours.ufrag)
        credentials = ours
        pendingCredentials = nil
        iceRestartWanted = false
        transport.ice.restart(local: ours, now: loop.now)
        transport.pump()
    }
}

/// A datagram path shared by many connections that finds each by its local ICE ufrag (a
/// server's one UDP port), and can be told a connection's new ufrag: an ICE restart then gives
/// a lite answerer new credentials too, as RFC 8445 §9 asks, instead of keeping its own.
public protocol UfragRoutedPacketIO: PacketIO {
    /// From now on, STUN for `ufrag` reaches this path too (loop thread).
    func route(ufrag: String)
}
