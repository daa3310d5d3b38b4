import Foundation
import HTTP
import PeerConnection
import SDP
import SessionSupport
import Synchronization
import Testing
import TestSupport
@testable import Relay

/// The relay's PATCH on WHIP/WHEP session resources (RFC 9725 §4.3): trickle candidates into
/// the session's connection (204), an ICE restart answered with the server's fragment (200),
/// and what it refuses: unknown resource 404, wrong type 415, stale entity-tag 412, malformed 400.
/// The relay and its peers run in process on a simulated loop (`Simulation`).
@Suite(.serialized) struct RelayTrickleTests {
    static let sdpfrag = "application/trickle-ice-sdpfrag"

    final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    struct Published {
        let pc: PeerConnection
        let resource: String
        let etag: String
        let offer: SDP.SessionDescription
        let answer: SDP.SessionDescription
    }

    /// A live publisher (video, H.264) whose WHIP POST is answered; connected when asked.
    func publish(_ sim: Simulation, _ relay: RelayServer, stream: String, connect: Bool) async throws -> Published {
        let pc = try sim.peer()
        _ = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        try await pc.setLocalDescription(try await pc.createOffer())
        #expect(sim.run { pc.iceGatheringState == .complete })
        let offer = try #require(pc.localDescription).sdp
        let created = await sim.request(relay, "POST", "/rtc/v1/whip/?app=live&stream=\(stream)",
                                        body: Array(offer.utf8), headers: ["Content-Type": "application/sdp"])
        #expect(created.status == 201, "\(created.status) \(created.bodyString)")
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: created.bodyString))
        if connect { try sim.connect(pc) }
        return Published(pc: pc, resource: try #require(created.headers["Location"]), etag: try #require(created.headers["ETag"]),
                         offer: try SDP.SessionDescription(parsing: offer), answer: try SDP.SessionDescription(parsing: created.bodyString))
    }

    func patch(_ sim: Simulation, _ relay: RelayServer, _ resource: String, _ body: String, type: String? = sdpfrag,
               ifMatch: String? = nil) async -> HTTPResponse {
        var headers: HTTPHeaders = [:]
        if let type { headers.add("Content-Type", type) }
        if let ifMatch { headers.add("If-Match", ifMatch) }
        return await sim.request(relay, "PATCH", resource, body: Array(body.utf8), headers: headers)
    }

    func ufrag(_ sdp: SDP.SessionDescription) -> String { sdp.media.first?.iceUfrag ?? sdp.iceUfrag ?? "" }
    func pwd(_ sdp: SDP.SessionDescription) -> String { sdp.media.first?.icePwd ?? sdp.icePwd ?? "" }

    @Test func createdSessionAdvertisesPatchAndItsEntityTag() async throws {
        let sim = Simulation()
        let relay = try sim.relay()
        let p = try await publish(sim, relay, stream: "etag", connect: false)
        #expect(p.etag == "\"\(ufrag(p.answer))\"", "the ETag names the server's ICE session")
        let again = await sim.request(relay, "POST", "/rtc/v1/whip/?app=live&stream=etag2",
                                      body: Array(p.offer.serialize().utf8), headers: ["Content-Type": "application/sdp"])
        #expect(again.headers["Accept-Patch"] == Self.sdpfrag)
        await p.pc.close()
        await relay.stop()
    }

    @Test func trickleIsAddedAndBadFragmentsAreRefusedWithReasons() async throws {
        let log = Log()
        let sim = Simulation()
        let relay = try sim.relay(log: log.add)
        let p = try await publish(sim, relay, stream: "trickle", connect: false)
        let creds = "a=ice-ufrag:\(ufrag(p.offer))\r\na=ice-pwd:\(pwd(p.offer))\r\n"
        let mline = "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\n"
        let candidate = "a=candidate:7 1 udp 2122260223 127.0.0.1 40000 typ host\r\n"

        // What the server refuses, and why.
        let unknown = await patch(sim, relay, "/rtc/v1/whip/?action=delete&token=0123456789abcdef0123456789abcdef", creds)
        #expect(unknown.status == 404)
        let wrongType = await patch(sim, relay, p.resource, creds + mline + candidate, type: "application/sdp")
        #expect(wrongType.status == 415 && wrongType.headers["Accept-Patch"] == Self.sdpfrag, "\(wrongType.status)")
        #expect(wrongType.bodyString.hasPrefix("Content-Type must be application/trickle-ice-sdpfrag"))
        let noType = await patch(sim, relay, p.resource, creds, type: nil)
        #expect(noType.status == 415)
        let stale = await patch(sim, relay, p.resource, creds + mline + candidate, ifMatch: "\"not-this-one\"")
        #expect(stale.status == 412, "\(stale.status) \(stale.bodyString)")
        let weak = await patch(sim, relay, p.resource, creds + mline + candidate, ifMatch: "W/\(p.etag)")
        #expect(weak.status == 412, "a weak tag never matches strongly")
        let cases: [(String, String)] = [
            ("v=0\r\n" + creds, "malformed trickle-ice-sdpfrag: SDP line 1: v= lines do not belong"),
            ("", "malformed trickle-ice-sdpfrag: SDP line 1: empty trickle-ice-sdpfrag"),
            (creds + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\n" + candidate, "has no a=mid"),
            ("a=ice-ufrag:\(ufrag(p.offer))\r\n" + mline + candidate, "a=ice-ufrag without a=ice-pwd"),
            ("a=ice-ufrag:\(ufrag(p.offer))\r\na=ice-pwd:notTheSessionsPasswordAtAll\r\n" + mline + candidate, "an ICE restart changes both"),
            (creds + mline + "a=candidate:garbage\r\n", "trickle-ice-sdpfrag refused: candidate 1: "),
            (creds + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:7\r\n" + candidate, "no m-line with mid \"7\""),
        ]
        for (body, reason) in cases {
            let r = await patch(sim, relay, p.resource, body, ifMatch: p.etag)
            #expect(r.status == 400 && r.bodyString.contains(reason), "\(body.debugDescription): \(r.status) \(r.bodyString)")
        }
        let binary = await sim.request(relay, "PATCH", p.resource, body: [0x61, 0x3d, 0xff, 0xfe],
                                       headers: ["Content-Type": Self.sdpfrag])
        #expect(binary.status == 400 && binary.bodyString.contains("not UTF-8"))
        #expect(!log.all.contains { $0.contains("trickled") }, "nothing was added by a refused PATCH")

        // Trickle: candidates (mid'd and session-level) and end-of-candidates → 204, same ETag.
        let ok = await patch(sim, relay, p.resource, creds + mline + candidate + "a=end-of-candidates\r\n", ifMatch: p.etag)
        #expect(ok.status == 204 && ok.headers["ETag"] == p.etag, "\(ok.status) \(ok.bodyString)")
        let sessionLevel = await patch(sim, relay, p.resource, creds + "a=candidate:8 1 udp 2122260223 127.0.0.1 40001 typ host\r\n", ifMatch: "*")
        #expect(sessionLevel.status == 204)
        let bare = await patch(sim, relay, p.resource, mline + "a=candidate:9 1 udp 2122260223 127.0.0.1 40002 typ host\r\n")
        #expect(bare.status == 204, "no credentials, no If-Match: the current ICE session's")
        let id = await relay.clients().first?["id"] as? String ?? "?"
        #expect(log.all.filter { $0.contains("trickled") } == [
            "serve: publisher \(id) trickled 1 candidate(s), end of candidates",
            "serve: publisher \(id) trickled 1 candidate(s)",
            "serve: publisher \(id) trickled 1 candidate(s)",
        ])
        await p.pc.close()
        await relay.stop()
    }

    /// An ICE restart by PATCH on a connected session: 200 with new server credentials and a new
    /// ETag (the old one is stale from then on); the client applies the answer fragment, checks
    /// with the new credentials select a pair again, and DTLS never restarts.
    @Test func iceRestartByPatchKeepsTheSessionConnected() async throws {
        let log = Log()
        let sim = Simulation()
        let relay = try sim.relay(log: log.add)
        let p = try await publish(sim, relay, stream: "restart", connect: true)

        let badRestart = await patch(sim, relay, p.resource, "a=ice-ufrag:newU\r\na=ice-pwd:newPasswordNewPassword00\r\na=candidate:1 1 udp\r\n",
                                         ifMatch: "*")
        #expect(badRestart.status == 400 && badRestart.bodyString.hasPrefix("ICE restart refused: candidate 1: "), "\(badRestart.bodyString)")
        p.pc.restartIce()
        let offer = try await p.pc.createOffer()
        let offerSDP = try SDP.SessionDescription(parsing: offer.sdp)
        let fragment = try #require(TrickleICEFragment(iceOf: offerSDP))
        #expect(ufrag(offerSDP) != ufrag(p.offer))
        let r = await patch(sim, relay, p.resource, fragment.serialize(), ifMatch: "*")
        #expect(r.status == 200, "\(r.status) \(r.bodyString)")
        #expect(r.headers["Content-Type"] == Self.sdpfrag)
        let theirs = try TrickleICEFragment(parsing: r.bodyString)
        let newCreds = try #require(try theirs.iceCredentials())
        #expect(newCreds.ufrag != ufrag(p.answer) && newCreds.pwd != pwd(p.answer), "the server restarts with new credentials")
        #expect(theirs.hasAttribute("ice-lite"))
        #expect(theirs.candidateGroups.first?.candidates.count == 1 && theirs.candidateGroups.first?.endOfCandidates == true)
        #expect(r.headers["ETag"] == "\"\(newCreds.ufrag)\"")
        // The old entity-tag names an ICE session that is gone.
        let stale = await patch(sim, relay, p.resource, TrickleICEFragment(iceOf: offerSDP, candidates: [], endOfCandidates: true)!.serialize(),
                                    ifMatch: p.etag)
        #expect(stale.status == 412)

        try await p.pc.setLocalDescription(offer)
        let answer = try p.answer.applyingICERestart(theirs)
        try await p.pc.setRemoteDescription(SessionDescription(type: .answer, sdp: answer.serialize()))
        // The client's checks with the new ufrag reach the session (the mux learnt it) and
        // select a pair proven after the restart.
        #expect(await sim.run(within: .seconds(5), untilAsync: { await restartedPairSelected(p.pc) }))
        #expect(p.pc.connectionState == .connected)
        #expect(log.all.contains { $0.contains("restarted ICE (ufrag \(newCreds.ufrag))") })
        let state = relay.state
        let found: RelaySession? = try await relay.loop.submit { state.value.sessions.values.first }
        let session = try #require(found)
        #expect(await sim.run(within: .seconds(5), untilAsync: { await restartedPairSelected(session.pc) }),
                "the relay's side selected a pair again")
        #expect(session.pc.connectionState == .connected && session.connected)
        await p.pc.close()
        // The stream holds the events since the pc was made and ends with its close: connecting,
        // connected, then none until closed.
        let states = await withDeadline(.seconds(10)) { () -> [PeerConnectionState]? in
            var states: [PeerConnectionState] = []
            for await e in p.pc.events { if case .connectionStateChanged(let s) = e { states.append(s) } }
            return states
        }
        #expect(states == [.connecting, .connected, .closed], "the connection state never changed across the restart: \(states ?? [])")
        await relay.stop()
    }
}

