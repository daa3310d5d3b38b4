import Foundation
import HTTP
import PeerConnection
import Testing
import STUN
import Transport
@testable import Relay

/// The relay's HTTP surface with access control on: who may publish, play, list and kick; the
/// session resource is a capability; one publisher per name even when 50 race for it.
@Suite(.serialized) struct RelayAccessTests {
    let http = HTTPClient(timeout: .seconds(20))

    func withRelay(_ policy: AccessPolicy, _ body: (RelayServer) async throws -> Void) async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, policy: policy, log: { _ in })
        do { try await body(relay) } catch {
            await relay.stop()
            throw error
        }
        await relay.stop()
    }

    /// A real offer (sendonly H.264 video) from a PeerConnection that is closed again.
    func offer() async throws -> String {
        var config = PeerConnection.Configuration()
        config.interfaceAddresses = [SocketAddress(host: "127.0.0.1", port: 0)].compactMap { $0 }
        let pc = try PeerConnection(configuration: config, loop: EventLoop(name: "test-offer"))
        _ = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        try await pc.setLocalDescription(try await pc.createOffer())
        await pc.waitForGatheringComplete()
        let sdp = try #require(pc.localDescription).sdp
        await pc.close()
        return sdp
    }

    func post(_ relay: RelayServer, _ endpoint: String, stream: String, sdp: String, bearer: String? = nil) async throws -> HTTPClientResponse {
        var headers: HTTPHeaders = ["Content-Type": "application/sdp"]
        if let bearer { headers.add("Authorization", "Bearer \(bearer)") }
        return try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/\(endpoint)/?app=live&stream=\(stream)",
                                   headers: headers, body: Array(sdp.utf8))
    }

    func srs(_ relay: RelayServer, _ api: String, streamURL: String, sdp: String) async throws -> [String: Any] {
        let body = try JSONSerialization.data(withJSONObject: ["streamurl": streamURL, "sdp": sdp])
        let r = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/\(api)/", headers: ["Content-Type": "application/json"],
                                    body: Array(body))
        return try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
    }

    @Test func authMatrixOverWHIPAndTheSRSAPI() async throws {
        try await withRelay(AccessPolicy(publishToken: "pub", playToken: "play", apiToken: "api")) { relay in
            let sdp = try await offer()
            #expect(try await post(relay, "whip", stream: "a", sdp: sdp).status == 401)
            let wrong = try await post(relay, "whip", stream: "a", sdp: sdp, bearer: "play")
            #expect(wrong.status == 403 && wrong.text == "wrong token for publishing\n")
            #expect(try await post(relay, "whip", stream: "a", sdp: sdp, bearer: "pub").status == 201)
            // SRS JSON API: the token rides on the streamurl; refusals are real 401/403 with SRS's JSON.
            let none = try await srs(relay, "publish", streamURL: "webrtc://127.0.0.1/live/b", sdp: sdp)
            #expect(none["code"] as? Int == 401)
            let bad = try await srs(relay, "publish", streamURL: "webrtc://127.0.0.1/live/b?token=nope", sdp: sdp)
            #expect(bad["code"] as? Int == 403 && bad["error"] as? String == "wrong token for publishing")
            let good = try await srs(relay, "publish", streamURL: "webrtc://127.0.0.1/live/b?token=pub", sdp: sdp)
            #expect(good["code"] as? Int == 0 && (good["sdp"] as? String)?.hasPrefix("v=0") == true)
            // Players: stream "a" is published (not yet connected); the play token is checked first.
            let player = try await srs(relay, "play", streamURL: "webrtc://127.0.0.1/live/a?token=pub", sdp: sdp)
            #expect(player["code"] as? Int == 403 && player["error"] as? String == "wrong token for playing")
            // Listing and kicking need the API token.
            #expect(try await http.send(method: "GET", url: "\(relay.url)/api/v1/streams/").status == 401)
            #expect(try await http.send(method: "GET", url: "\(relay.url)/api/v1/streams/", headers: ["Authorization": "Bearer pub"]).status == 403)
            let listed = try await http.send(method: "GET", url: "\(relay.url)/api/v1/clients/", headers: ["Authorization": "Bearer api"])
            #expect(listed.status == 200)
            let clients = try #require((try JSONSerialization.jsonObject(with: Data(listed.body)) as? [String: Any])?["clients"] as? [[String: Any]])
            #expect(clients.count == 2)
            let id = try #require(clients.first?["id"] as? String)
            #expect(try await http.send(method: "DELETE", url: "\(relay.url)/api/v1/clients/\(id)/").status == 401)
            #expect(try await http.send(method: "DELETE", url: "\(relay.url)/api/v1/clients/\(id)/",
                                        headers: ["Authorization": "Bearer api"]).status == 200)
            #expect(await relay.clients().count == 1)
        }
    }

    /// What a web page could do to a relay on loopback: a rebinding Host is 421 before any
    /// handler, a foreign Origin may not POST (403), and SRS's API takes only JSON (415), so a
    /// cross-site "simple" request cannot create a session. The API token is a header only.
    @Test func refusesWhatAWebPageCouldSend() async throws {
        try await withRelay(AccessPolicy()) { relay in
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
        try await withRelay(AccessPolicy(apiToken: "api")) { relay in
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
        try await withRelay(AccessPolicy()) { relay in
            let created = try await post(relay, "whip", stream: "cap", sdp: try await offer())
            #expect(created.status == 201)
            let location = try #require(created.headers["Location"])
            let secret = try #require(location.split(separator: "&").first { $0.hasPrefix("token=") || $0.contains("?action=delete&token=") }
                .map { String($0.split(separator: "=").last ?? "") })
            #expect(secret.count == 32)
            let listing = try await http.send(method: "GET", url: "\(relay.url)/api/v1/streams/").text
                + (try await http.send(method: "GET", url: "\(relay.url)/api/v1/clients/").text)
            #expect(!listing.contains(secret))
            let id = try #require(await relay.clients().first?["id"] as? String)
            #expect(try await http.send(method: "DELETE", url: "\(relay.url)/rtc/v1/whip/?action=delete&token=\(id)").status == 404)
            #expect(try await http.send(method: "DELETE", url: "\(relay.url)\(location)").status == 200)
            #expect(await relay.clients().isEmpty)
        }
    }

    @Test func fiftyConcurrentPublishesToOneNameAcceptExactlyOne() async throws {
        try await withRelay(AccessPolicy()) { relay in
            let sdp = try await offer()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 { group.addTask { try await post(relay, "whip", stream: "race", sdp: sdp).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == 409 }.count == 49, "\(statuses)")
        }
    }

    @Test func badNamesAndHugeOffersAre400() async throws {
        try await withRelay(AccessPolicy()) { relay in
            let sdp = try await offer()
            let slash = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/whip/?app=a%2Fb&stream=c",
                                            headers: ["Content-Type": "application/sdp"], body: Array(sdp.utf8))
            #expect(slash.status == 400 && slash.text.hasPrefix("invalid app name a/b"))
            let crlf = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/whip/?app=live&stream=x%0D%0Aserve:%20forged",
                                           headers: ["Content-Type": "application/sdp"], body: Array(sdp.utf8))
            #expect(crlf.status == 400 && crlf.text.hasPrefix("invalid stream name x\\u{d}\\u{a}serve: forged"))
            let video = sdp[sdp.range(of: "m=video")!.lowerBound...]
            let many = String(sdp) + String(repeating: String(video), count: 3)
            let r = try await post(relay, "whip", stream: "big", sdp: many)
            #expect(r.status == 400 && r.text == "the offer has 4 media sections; at most 3 are accepted\n")
        }
    }

    /// An offer whose peer never connects holds its name only until the connect timeout.
    @Test func sessionsThatNeverConnectAreReleased() async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, connectTimeout: .milliseconds(300), log: { _ in })
        let sdp = try await offer()
        #expect(try await post(relay, "whip", stream: "squat", sdp: sdp).status == 201)
        #expect(try await post(relay, "whip", stream: "squat", sdp: sdp).status == 409)
        let deadline = ContinuousClock.now.advanced(by: .seconds(5))
        while await !relay.clients().isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let clients = await relay.clients(), streams = await relay.streams()
        #expect(clients.isEmpty && streams.isEmpty)
        #expect(try await post(relay, "whip", stream: "squat", sdp: sdp).status == 201, "the name is free again")
        await relay.stop()
    }

    @Test func metricsInPrometheusTextFormat() async throws {
        try await withRelay(AccessPolicy()) { relay in
            let created = try await post(relay, "whip", stream: "m", sdp: try await offer())
            #expect(created.status == 201)
            let r = try await http.send(method: "GET", url: "\(relay.url)/metrics")
            #expect(r.status == 200 && r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8")
            let lines = r.text.split(separator: "\n").map(String.init)
            #expect(lines.contains("# TYPE swiftrtc_sessions gauge") && lines.contains("swiftrtc_sessions 1"))
            #expect(lines.contains("swiftrtc_players{app=\"live\",stream=\"m\"} 0"))
            #expect(lines.contains("swiftrtc_rtp_packets_received_total 0"))
            // Every sample line is NAME[{labels}] NUMBER.
            let samples = lines.filter { !$0.hasPrefix("#") }
            #expect(!samples.isEmpty && samples.allSatisfy { $0.split(separator: " ").count == 2 && Double($0.split(separator: " ")[1]) != nil })
        }
        try await withRelay(AccessPolicy(apiToken: "api")) { relay in
            let none = try await http.send(method: "GET", url: "\(relay.url)/metrics")
            let good = try await http.send(method: "GET", url: "\(relay.url)/metrics", headers: ["Authorization": "Bearer api"])
            #expect(none.status == 401 && good.status == 200)
        }
    }

    @Test func limitsUnconnectedSessionsPerAddress() async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, maxPendingPerAddress: 3, log: { _ in })
        let sdp = try await offer()
        for i in 0..<3 { #expect(try await post(relay, "whip", stream: "p\(i)", sdp: sdp).status == 201) }
        let refused = try await post(relay, "whip", stream: "p3", sdp: sdp)
        #expect(refused.status == 429 && refused.text == "too many sessions from 127.0.0.1 that have not connected (3)\n")
        await relay.stop()
    }

    @Test func refusesAnOpenServerOffLoopback() async throws {
        let error = await #expect(throws: PeerConnectionError.self) {
            _ = try await RelayServer(httpHost: "0.0.0.0", httpPort: 0, udpPort: 0, log: { _ in })
        }
        #expect(error?.description.hasPrefix("--http 0.0.0.0 is not loopback: give --publish-token") == true)
    }
}
