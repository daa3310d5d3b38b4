import ICE
import PeerConnection
import Testing

/// `PeerConnectionError.kind` at representative throw sites: what an app switches on, with the
/// message unchanged. No connection is made: every error here comes before the network.
@Suite("PeerConnectionError kinds")
struct ErrorKindTests {
    /// A remote offer whose transport section says `proto` (ICE and DTLS attributes present).
    func offer(proto: String = "UDP/TLS/RTP/SAVPF", fingerprint: Bool = true) -> String {
        "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 \(proto) 111\r\na=mid:0\r\n"
            + "a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
            + (fingerprint ? "a=fingerprint:sha-256 \(Array(repeating: "AB", count: 32).joined(separator: ":"))\r\na=setup:actpass\r\n" : "")
            + "a=sendrecv\r\na=rtpmap:111 opus/48000/2\r\n"
    }

    /// The kind `body` threw (nil: it threw something else, or nothing).
    func kindThrown(_ body: () async throws -> Void) async -> PeerConnectionError.Kind? {
        do { try await body() } catch let error as PeerConnectionError { return error.kind } catch {}
        return nil
    }

    @Test("malformed SDP is .invalidDescription with the line; a description we cannot use says why")
    func descriptions() async throws {
        let pc = try loopbackPeer()
        let bad = offer().replacing("a=rtpmap:111 opus/48000/2", with: "a=rtpmap:111 opus/fast")
        let syntax = await #expect(throws: PeerConnectionError.self) {
            try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: bad))
        }
        #expect(syntax?.kind == .invalidDescription)
        #expect(syntax?.line == 12)
        #expect(syntax?.description.hasPrefix("setRemoteDescription: SDP line 12: ") == true, "\(syntax?.description ?? "")")
        #expect(syntax?.message == syntax?.description)
        let local = await #expect(throws: PeerConnectionError.self) {
            try await pc.setLocalDescription(SessionDescription(type: .offer, sdp: bad))
        }
        #expect(local?.kind == .invalidDescription && local?.line == 12)

        // Whole-description faults have a kind but no line.
        let unsigned = await #expect(throws: PeerConnectionError.self) {
            try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: offer(fingerprint: false)))
        }
        #expect(unsigned == PeerConnectionError(.invalidDescription, "setRemoteDescription: m-line 0 has no a=fingerprint (DTLS is required)"))

        let plainRTP = await #expect(throws: PeerConnectionError.self) {
            try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: offer(proto: "RTP/AVP")))
        }
        #expect(plainRTP?.kind == .unsupported, "\(plainRTP?.description ?? "")")
        #expect(pc.signalingState == .stable)
        await pc.close()
    }

    @Test("calls the signaling state does not take are .invalidState")
    func signalingState() async throws {
        let pc = try loopbackPeer()
        let answer = await #expect(throws: PeerConnectionError.self) {
            try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: offer()))
        }
        #expect(answer == PeerConnectionError(.invalidState, "setRemoteDescription: cannot apply a remote answer in state stable"))
        let noOffer = await #expect(throws: PeerConnectionError.self) { _ = try await pc.createAnswer() }
        #expect(noOffer?.kind == .invalidState)
        let rollback = await #expect(throws: PeerConnectionError.self) {
            try await pc.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
        }
        #expect(rollback?.kind == .invalidState)
        // The same offer is fine where it fits.
        try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: offer()))
        #expect(pc.signalingState == .haveRemoteOffer)
        await pc.close()
    }

    @Test("every call on a closed connection is .closed, and so is waiting for it to connect")
    func closed() async throws {
        let pc = try loopbackPeer()
        let early = try await pc.createDataChannel("early")
        let connecting = #expect(throws: PeerConnectionError.self) { try early.send("too soon") }
        #expect(connecting?.kind == .invalidState)
        await pc.close()

        let kinds = [
            await kindThrown { _ = try await pc.createOffer() },
            await kindThrown { try await pc.addTransceiver(.video) },
            await kindThrown { _ = try await pc.createDataChannel("late") },
            await kindThrown { try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: offer())) },
            await kindThrown { try await pc.addIceCandidate(IceCandidate(candidate: "candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host")) },
            await kindThrown { try early.send("after close") },
        ]
        #expect(kinds == Array(repeating: .closed, count: 6))

        let wait = await #expect(throws: PeerConnectionError.self) { try await pc.waitConnected(timeout: .seconds(5)) }
        #expect(wait == PeerConnectionError(.closed, "connection closed before it connected"))
    }

    @Test("candidates, arguments and limits have their own kinds")
    func candidatesArgumentsLimits() async throws {
        let pc = try loopbackPeer()
        let garbage = await #expect(throws: PeerConnectionError.self) {
            try await pc.addIceCandidate(IceCandidate(candidate: "candidate:garbage"))
        }
        #expect(garbage?.kind == .invalidCandidate)
        #expect(garbage?.description.hasPrefix("addIceCandidate: ") == true, "\(garbage?.description ?? "")")

        try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: offer()))
        let wrongMid = await #expect(throws: PeerConnectionError.self) {
            try await pc.addIceCandidate(IceCandidate(candidate: "candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host", sdpMid: "7"))
        }
        #expect(wrongMid == PeerConnectionError(.invalidCandidate, "addIceCandidate: no m-line with mid \"7\" in the remote description (mids: 0)"))

        let flood = Array(repeating: IceCandidate(candidate: ""), count: ICEConfiguration().maxRemoteCandidates + 2)
        let tooMany = await #expect(throws: PeerConnectionError.self) { try await pc.addIceCandidates(flood) }
        #expect(tooMany?.kind == .limitExceeded)

        let channel = await #expect(throws: PeerConnectionError.self) {
            _ = try await pc.createDataChannel("x", DataChannelInit(negotiated: true))
        }
        #expect(channel == PeerConnectionError(.invalidArgument, "createDataChannel: a negotiated channel needs an id"))

        let sender = try await pc.addTransceiver(.video).sender
        let range = #expect(throws: PeerConnectionError.self) {
            try sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(maxBitrate: 100_000, minBitrate: 200_000)]))
        }
        #expect(range?.kind == .invalidArgument)
        // Simulcast is set up with the transceiver (sendEncodings); setParameters cannot add layers.
        let simulcast = #expect(throws: PeerConnectionError.self) {
            try sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(rid: "a"), RtpEncodingParameters(rid: "b")]))
        }
        #expect(simulcast?.kind == .invalidArgument && simulcast?.message.contains("encodings and their rids are fixed") == true)
        await pc.close()
    }

    @Test("errors in the background arrive typed on events: an ICE server we cannot use is .unsupported")
    func errorEvents() async throws {
        let pc = try loopbackPeer { $0.iceServers = [IceServer(urls: ["stuns:127.0.0.1"])] }
        try await pc.addTransceiver(.audio)
        try await pc.setLocalDescription(try await pc.createOffer())
        await pc.close()   // ends the stream after what it holds
        var reported: [PeerConnectionError] = []
        for await event in pc.events { if case .error(let error) = event { reported.append(error) } }
        #expect(reported == [PeerConnectionError(.unsupported, "iceServers: stuns:127.0.0.1: STUN over TLS (stuns:) is not implemented; skipped")])
    }

    @Test("kinds are stable names an app can log or map")
    func names() {
        #expect(PeerConnectionError.Kind.allCases.map(\.rawValue) == [
            "invalidState", "closed", "invalidDescription", "invalidCandidate", "invalidArgument", "limitExceeded",
            "unsupported", "transport", "timeout",
        ])
        // Equal errors: same kind, same text, same line.
        #expect(PeerConnectionError(.closed, "x") != PeerConnectionError(.invalidState, "x"))
        #expect("\(PeerConnectionError(.transport, "DTLS set-up failed: no"))" == "DTLS set-up failed: no")
    }
}
