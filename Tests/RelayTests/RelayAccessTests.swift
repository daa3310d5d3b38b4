import Foundation
import HTTP
import PeerConnection
import SessionSupport
import Testing
@testable import Relay

/// The relay's HTTP surface with access control on: who may publish, play, list and kick; the
/// session resource is a capability; one publisher per name even when 50 race for it.
///
/// The relay runs in process on a simulated loop and each request goes to its handler as its
/// HTTP server would hand it over (`Simulation.wireRequest`). What the HTTP server itself does
/// before any handler (the Host and Origin guard, signaling mounted on it) is tested on a real
/// server and socket: `refusesWhatAWebPageCouldSend`.
@Suite(.serialized) struct RelayAccessTests {
    let http = HTTPClient(timeout: .seconds(20))

    func withRelay(_ policy: AccessPolicy, _ body: (Simulation, RelayServer) async throws -> Void) async throws {
        let sim = Simulation()
        let relay = try sim.relay(policy: policy)
        do { try await body(sim, relay) } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()
    }

    /// The relay with its HTTP server on loopback and its media on a real UDP port.
    func withServedRelay(_ policy: AccessPolicy, _ body: (RelayServer) async throws -> Void) async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, policy: policy, log: { _ in })
        do { try await body(relay) } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()
    }

    /// A real offer (sendonly H.264 video) from a PeerConnection that is closed again.
    func offer(_ sim: Simulation = Simulation()) async throws -> String {
        let pc = try sim.peer()
        _ = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        try await pc.setLocalDescription(try await pc.createOffer())
        #expect(sim.run { pc.iceGatheringState == .complete })
        let sdp = try #require(pc.localDescription).sdp
        await pc.close()
        return sdp
    }

    func post(_ sim: Simulation, _ relay: RelayServer, _ endpoint: String, stream: String, sdp: String,
              bearer: String? = nil) async throws -> HTTPResponse {
        var headers: HTTPHeaders = ["Content-Type": "application/sdp"]
        if let bearer { headers.add("Authorization", "Bearer \(bearer)") }
        return try await sim.wireRequest(relay, "POST", "/rtc/v1/\(endpoint)/?app=live&stream=\(stream)", body: Array(sdp.utf8),
                                         headers: headers)
    }

    func srs(_ sim: Simulation, _ relay: RelayServer, _ api: String, streamURL: String, sdp: String) async throws -> [String: Any] {
        let body = try JSONSerialization.data(withJSONObject: ["streamurl": streamURL, "sdp": sdp])
        let r = try await sim.wireRequest(relay, "POST", "/rtc/v1/\(api)/", body: Array(body), headers: ["Content-Type": "application/json"])
        return try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
    }

    func get(_ sim: Simulation, _ relay: RelayServer, _ target: String, headers: HTTPHeaders = []) async throws -> HTTPResponse {
        try await sim.wireRequest(relay, "GET", target, headers: headers)
    }

    func delete(_ sim: Simulation, _ relay: RelayServer, _ target: String, headers: HTTPHeaders = []) async throws -> HTTPResponse {
        try await sim.wireRequest(relay, "DELETE", target, headers: headers)
    }

    @Test func authMatrixOverWHIPAndTheSRSAPI() async throws {
        try await withRelay(AccessPolicy(publishToken: "pub", playToken: "play", apiToken: "api")) { sim, relay in
            let sdp = try await offer(sim)
            #expect(try await post(sim, relay, "whip", stream: "a", sdp: sdp).status == 401)
            let wrong = try await post(sim, relay, "whip", stream: "a", sdp: sdp, bearer: "play")
            #expect(wrong.status == 403 && wrong.bodyString == "wrong token for publishing\n")
            #expect(try await post(sim, relay, "whip", stream: "a", sdp: sdp, bearer: "pub").status == 201)
            // SRS JSON API: the token rides on the streamurl; refusals are real 401/403 with SRS's JSON.
            let none = try await srs(sim, relay, "publish", streamURL: "webrtc://127.0.0.1/live/b", sdp: sdp)
            #expect(none["code"] as? Int == 401)
            let bad = try await srs(sim, relay, "publish", streamURL: "webrtc://127.0.0.1/live/b?token=nope", sdp: sdp)
            #expect(bad["code"] as? Int == 403 && bad["error"] as? String == "wrong token for publishing")
            let good = try await srs(sim, relay, "publish", streamURL: "webrtc://127.0.0.1/live/b?token=pub", sdp: sdp)
            #expect(good["code"] as? Int == 0 && (good["sdp"] as? String)?.hasPrefix("v=0") == true)
            // Players: stream "a" is published (not yet connected); the play token is checked first.
            let player = try await srs(sim, relay, "play", streamURL: "webrtc://127.0.0.1/live/a?token=pub", sdp: sdp)
            #expect(player["code"] as? Int == 403 && player["error"] as? String == "wrong token for playing")
            // Listing and kicking need the API token.
            #expect(try await get(sim, relay, "/api/v1/streams/").status == 401)
            #expect(try await get(sim, relay, "/api/v1/streams/", headers: ["Authorization": "Bearer pub"]).status == 403)
            let listed = try await get(sim, relay, "/api/v1/clients/", headers: ["Authorization": "Bearer api"])
            #expect(listed.status == 200)
            let clients = try #require((try JSONSerialization.jsonObject(with: Data(listed.body)) as? [String: Any])?["clients"] as? [[String: Any]])
            #expect(clients.count == 2)
            let id = try #require(clients.first?["id"] as? String)
            #expect(try await delete(sim, relay, "/api/v1/clients/\(id)/").status == 401)
            #expect(try await delete(sim, relay, "/api/v1/clients/\(id)/", headers: ["Authorization": "Bearer api"]).status == 200)
            #expect(await relay.clients().count == 1)
        }
    }

    /// What a web page could do to a relay on loopback: a rebinding Host is 421 before any
    /// handler, a foreign Origin may not POST (403), and SRS's API takes only JSON (415), so a
    /// cross-site "simple" request cannot create a session. The API token is a header only.
    /// On the relay's HTTP server and a real socket: the guard runs in the server, before any handler.
    @Test func refusesWhatAWebPageCouldSend() async throws {
        try await withServedRelay(AccessPolicy()) { relay in
            let rebound = try await http.send(method: "GET", url: "\(relay.url)/api/v1/clients/", headers: ["Host": "rebind.evil.example:1985"])
            #expect(rebound.status == 421 && rebound.text.hasPrefix("Host \"rebind.evil.example:1985\" is not a name this server answers to"))
            let kick = try await http.send(method: "DELETE", url: "\(relay.url)/api/v1/clients/x/", headers: ["Host": "rebind.evil.example"])
            #expect(kick.status == 421)
            let body = try JSONSerialization.data(withJSONObject: ["streamurl": "webrtc://127.0.0.1/live/x", "sdp": try await offer()])
            let plain = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/publish/", headers: ["Content-Type": "text/plain"],
                                            body: Array(body))
            #expect(plain.status == 415 && plain.text == #"{"code":415,"error":"Content-Type must be application\/json"}"#)
            let crossSite = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/publish/",
                                                headers: ["Content-Type": "application/json", "Origin": "https://evil.example"], body: Array(body))
            #expect(crossSite.status == 403)
            let ownPage = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/publish/",
                                              headers: ["Content-Type": "application/json; charset=utf-8", "Origin": relay.url], body: Array(body))
            #expect(ownPage.status == 200 && ownPage.text.contains(#""code":0"#))
            #expect(await relay.clients().count == 1)
        }
        try await withServedRelay(AccessPolicy(apiToken: "api")) { relay in
            // Any Host once access control is on (unless names are given); no token in the URL.
            let named = try await http.send(method: "GET", url: "\(relay.url)/api/v1/streams/", headers: ["Host": "relay.example", "Authorization": "Bearer api"])
            #expect(named.status == 200)
            #expect(try await http.send(method: "GET", url: "\(relay.url)/api/v1/streams/?token=api").status == 401)
            // Signaling is off without --signal-token.
            let signal = try await http.send(method: "GET", url: "\(relay.url)/rtc/v1/signal/?room=r")
            #expect(signal.status == 403 && signal.text == "signaling is off: the server was started with access control but no --signal-token\n")
        }
    }

    /// The public id (listed) does not end a session; only the secret in the Location does, and
    /// the secret appears nowhere in the listing.
    @Test func sessionResourceIsACapability() async throws {
        try await withRelay(AccessPolicy()) { sim, relay in
            let created = try await post(sim, relay, "whip", stream: "cap", sdp: try await offer(sim))
            #expect(created.status == 201)
            let location = try #require(created.headers["Location"])
            let secret = try #require(location.split(separator: "&").first { $0.hasPrefix("token=") || $0.contains("?action=delete&token=") }
                .map { String($0.split(separator: "=").last ?? "") })
            #expect(secret.count == 32)
            let listing = try await get(sim, relay, "/api/v1/streams/").bodyString + (try await get(sim, relay, "/api/v1/clients/").bodyString)
            #expect(!listing.contains(secret))
            let id = try #require(await relay.clients().first?["id"] as? String)
            #expect(try await delete(sim, relay, "/rtc/v1/whip/?action=delete&token=\(id)").status == 404)
            #expect(try await delete(sim, relay, location).status == 200)
            #expect(await relay.clients().isEmpty)
        }
    }

    /// 50 POSTs at once, each on its own task, into the handler (the HTTP server runs each
    /// connection's handler on a task the same way).
    @Test func fiftyConcurrentPublishesToOneNameAcceptExactlyOne() async throws {
        try await withRelay(AccessPolicy()) { sim, relay in
            let sdp = try await offer(sim)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 { group.addTask { try await post(sim, relay, "whip", stream: "race", sdp: sdp).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == 409 }.count == 49, "\(statuses)")
        }
    }

    @Test func badNamesAndHugeOffersAre400() async throws {
        try await withRelay(AccessPolicy()) { sim, relay in
            let sdp = try await offer(sim)
            let slash = try await sim.wireRequest(relay, "POST", "/rtc/v1/whip/?app=a%2Fb&stream=c", body: Array(sdp.utf8),
                                                  headers: ["Content-Type": "application/sdp"])
            #expect(slash.status == 400 && slash.bodyString.hasPrefix("invalid app name a/b"))
            let crlf = try await sim.wireRequest(relay, "POST", "/rtc/v1/whip/?app=live&stream=x%0D%0Aserve:%20forged", body: Array(sdp.utf8),
                                                 headers: ["Content-Type": "application/sdp"])
            #expect(crlf.status == 400 && crlf.bodyString.hasPrefix("invalid stream name x\\u{d}\\u{a}serve: forged"))
            let video = sdp[sdp.range(of: "m=video")!.lowerBound...]
            let many = String(sdp) + String(repeating: String(video), count: 3)
            let r = try await post(sim, relay, "whip", stream: "big", sdp: many)
            #expect(r.status == 400 && r.bodyString == "the offer has 4 media sections; at most 3 are accepted\n")
        }
    }

    /// An offer whose peer never connects holds its name only until the connect timeout (300 ms
    /// of virtual time).
    @Test func sessionsThatNeverConnectAreReleased() async throws {
        let sim = Simulation()
        let relay = try sim.relay(connectTimeout: .milliseconds(300))
        let sdp = try await offer(sim)
        #expect(try await post(sim, relay, "whip", stream: "squat", sdp: sdp).status == 201)
        #expect(try await post(sim, relay, "whip", stream: "squat", sdp: sdp).status == 409)
        let started = sim.loop.now
        #expect(sim.run(within: .seconds(5)) { relay.state.value.sessions.isEmpty })
        #expect(sim.loop.now - started >= .milliseconds(300), "released before the timeout, after \(sim.loop.now - started)")
        let clients = await relay.clients(), streams = await relay.streams()
        #expect(clients.isEmpty && streams.isEmpty)
        #expect(try await post(sim, relay, "whip", stream: "squat", sdp: sdp).status == 201, "the name is free again")
        await relay.stop()
    }

    @Test func metricsInPrometheusTextFormat() async throws {
        try await withRelay(AccessPolicy()) { sim, relay in
            let created = try await post(sim, relay, "whip", stream: "m", sdp: try await offer(sim))
            #expect(created.status == 201)
            let r = try await get(sim, relay, "/metrics")
            #expect(r.status == 200 && r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8")
            let lines = r.bodyString.split(separator: "\n").map(String.init)
            #expect(lines.contains("# TYPE swiftrtc_sessions gauge") && lines.contains("swiftrtc_sessions 1"))
            #expect(lines.contains("swiftrtc_players{app=\"live\",stream=\"m\"} 0"))
            #expect(lines.contains("swiftrtc_rtp_packets_received_total 0"))
            // Every sample line is NAME[{labels}] NUMBER.
            let samples = lines.filter { !$0.hasPrefix("#") }
            #expect(!samples.isEmpty && samples.allSatisfy { $0.split(separator: " ").count == 2 && Double($0.split(separator: " ")[1]) != nil })
        }
        try await withRelay(AccessPolicy(apiToken: "api")) { sim, relay in
            let none = try await get(sim, relay, "/metrics")
            let good = try await get(sim, relay, "/metrics", headers: ["Authorization": "Bearer api"])
            #expect(none.status == 401 && good.status == 200)
        }
    }

    @Test func limitsUnconnectedSessionsPerAddress() async throws {
        let sim = Simulation()
        let mux = try sim.loop.perform { try sim.network.mux(at: sim.nextAddress(port: 8000)) }
        let relay = try RelayServer(loop: sim.loop, media: mux, httpPort: nil, maxPendingPerAddress: 3, log: { _ in })
        let sdp = try await offer(sim)
        for i in 0..<3 { #expect(try await post(sim, relay, "whip", stream: "p\(i)", sdp: sdp).status == 201) }
        let refused = try await post(sim, relay, "whip", stream: "p3", sdp: sdp)
        #expect(refused.status == 429 && refused.bodyString == "too many sessions from 10.0.0.200 that have not connected (3)\n")
        await relay.stop()
    }

    @Test func refusesAnOpenServerOffLoopback() async throws {
        let error = await #expect(throws: PeerConnectionError.self) {
            _ = try await RelayServer(httpHost: "0.0.0.0", httpPort: 0, udpPort: 0, log: { _ in })
        }
        #expect(error?.description.hasPrefix("--http 0.0.0.0 is not loopback: give --publish-token") == true)
    }
}
