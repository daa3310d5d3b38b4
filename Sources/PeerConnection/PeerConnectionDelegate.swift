/// The Google iOS SDK's `RTCPeerConnectionDelegate` in Swift: a connection's events as method
/// calls, for an object that handles them where they happen (a relay session, a call
/// controller). Every method has a default that does nothing: implement the ones you need.
/// The same events, as values, are on `PeerConnection.events`.
///
/// `PeerConnection.delegate` holds it weakly. Its methods are called on the connection's loop
/// thread (`PeerConnection.loop`), one event at a time and in order, each before the same event
/// goes on `events`; the connection's protocol work waits while a method runs, so hand anything
/// slow (awaiting, I/O) to a task.
public protocol PeerConnectionDelegate: AnyObject, Sendable {
    /// `signalingState` changed.
    func peerConnection(_ peerConnection: PeerConnection, didChange stateChanged: SignalingState)
    /// `iceConnectionState` changed.
    func peerConnection(_ peerConnection: PeerConnection, didChange newState: IceConnectionState)
    /// `iceGatheringState` changed.
    func peerConnection(_ peerConnection: PeerConnection, didChange newState: IceGatheringState)
    /// `connectionState` changed (W3C `connectionstatechange`).
    func peerConnection(_ peerConnection: PeerConnection, didChange newState: PeerConnectionState)
    /// A local candidate to send to the peer (trickle ICE).
    func peerConnection(_ peerConnection: PeerConnection, didGenerate candidate: IceCandidate)
    /// W3C `selectedcandidatepairchange`: media now goes between these addresses.
    func peerConnection(_ peerConnection: PeerConnection, didSelectPairFrom local: String, to remote: String)
    /// Local candidates withdrawn: their interface address went away (continual gathering).
    func peerConnection(_ peerConnection: PeerConnection, didRemove candidates: [IceCandidate])
    /// The peer opened a data channel (W3C `datachannel`); it is open already. Set its delegate
    /// here to get every message it carries.
    func peerConnection(_ peerConnection: PeerConnection, didOpen dataChannel: DataChannel)
    /// W3C `negotiationneeded`: local changes wait for an offer (in `stable`, coalesced).
    func peerConnectionShouldNegotiate(_ peerConnection: PeerConnection)
    /// W3C `track`: the peer started sending on this transceiver (its receiver has the track).
    func peerConnection(_ peerConnection: PeerConnection, didStartReceivingOn transceiver: RtpTransceiver)
    /// Something went wrong in the background (DTLS or TURN failed, an ICE server cannot be
    /// used, SCTP trouble); the connection may go on. Not in Google's protocol, which has no
    /// such event: its errors only show as states.
    func peerConnection(_ peerConnection: PeerConnection, didReport error: PeerConnectionError)
}

extension PeerConnectionDelegate {
    public func peerConnection(_ peerConnection: PeerConnection, didChange stateChanged: SignalingState) {}
    public func peerConnection(_ peerConnection: PeerConnection, didChange newState: IceConnectionState) {}
    public func peerConnection(_ peerConnection: PeerConnection, didChange newState: IceGatheringState) {}
    public func peerConnection(_ peerConnection: PeerConnection, didChange newState: PeerConnectionState) {}
    public func peerConnection(_ peerConnection: PeerConnection, didGenerate candidate: IceCandidate) {}
    public func peerConnection(_ peerConnection: PeerConnection, didSelectPairFrom local: String, to remote: String) {}
    public func peerConnection(_ peerConnection: PeerConnection, didRemove candidates: [IceCandidate]) {}
    public func peerConnection(_ peerConnection: PeerConnection, didOpen dataChannel: DataChannel) {}
    public func peerConnectionShouldNegotiate(_ peerConnection: PeerConnection) {}
    public func peerConnection(_ peerConnection: PeerConnection, didStartReceivingOn transceiver: RtpTransceiver) {}
    public func peerConnection(_ peerConnection: PeerConnection, didReport error: PeerConnectionError) {}
}

extension PeerConnectionEvent {
    /// Calls the `delegate` method for this event.
    func deliver(to delegate: any PeerConnectionDelegate, from peerConnection: PeerConnection) {
        switch self {
        case .iceCandidate(let candidate): delegate.peerConnection(peerConnection, didGenerate: candidate)
        case .iceCandidatesRemoved(let candidates): delegate.peerConnection(peerConnection, didRemove: candidates)
        case .iceGatheringStateChanged(let state): delegate.peerConnection(peerConnection, didChange: state)
        case .iceConnectionStateChanged(let state): delegate.peerConnection(peerConnection, didChange: state)
        case .connectionStateChanged(let state): delegate.peerConnection(peerConnection, didChange: state)
        case .signalingStateChanged(let state): delegate.peerConnection(peerConnection, didChange: state)
        case .selectedCandidatePairChanged(let local, let remote):
            delegate.peerConnection(peerConnection, didSelectPairFrom: local, to: remote)
        case .dataChannel(let channel): delegate.peerConnection(peerConnection, didOpen: channel)
        case .negotiationNeeded: delegate.peerConnectionShouldNegotiate(peerConnection)
        case .track(let transceiver): delegate.peerConnection(peerConnection, didStartReceivingOn: transceiver)
        case .error(let error): delegate.peerConnection(peerConnection, didReport: error)
        }
    }
}
