import Capture
import Media
@testable import PeerConnection
import Relay
import RTP
import SessionSupport
import Testing

/// Simulcast we send (`TransceiverInit.sendEncodings`): the offer, the relay taking the layers
/// (each player decodes the size of the layer it asked for), a peer that refuses simulcast
/// (one layer, the largest), and how the estimate is split across layers.
@Suite struct SimulcastSendTests {
    static let layers = [RtpEncodingParameters(rid: "l", scaleResolutionDownBy: 4),
                         RtpEncodingParameters(rid: "m", scaleResolutionDownBy: 2),
                         RtpEncodingParameters(rid: "h")]

    /// A sendonly H.264 publisher of `layers` with its source.
    private func publisher(_ sim: Simulation, _ layers: [RtpEncodingParameters] = layers) async throws
        -> (PeerConnection, RtpTransceiver, VideoSource) {
        let pc = try sim.peer(Simulation.fullSizeStart)
        let source = VideoSource()
        let t = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly, sendEncodings: layers), codecs: [.h264])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        return (pc, t, source)
    }

    @Test func theOfferNamesEveryLayerAndItsStreamIDs() async throws {
        let sim = Simulation()
        let (pc, t, _) = try await publisher(sim)
        let offer = try await pc.createOffer().sdp
        for line in ["a=rid:l send", "a=rid:m send", "a=rid:h send", "a=simulcast:send l;m;h",
                     "a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
                     "a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"] {
            #expect(offer.contains(line + "\r\n"), "\(line) missing from\n\(offer)")
        }
        // SSRCs are signalled for the largest layer only (the one that goes alone without simulcast).
        #expect(t.sender.rid == "h")
        let ssrcLines = offer.components(separatedBy: "\r\n").filter { $0.hasPrefix("a=ssrc:") && $0.contains("cname:") }
        #expect(ssrcLines.count == 2 && ssrcLines[0].hasPrefix("a=ssrc:\(t.sender.ssrc) "), "\(ssrcLines)")
        await pc.close()
    }

    @Test func badEncodingsAreRefusedWithTheReason() async throws {
        let sim = Simulation()
        let pc = try sim.peer()
        func refusal(_ kind: MediaKind, _ encodings: [RtpEncodingParameters]) async -> String {
            do {
                _ = try await pc.addTransceiver(kind, TransceiverInit(sendEncodings: encodings))
                return "accepted"
            } catch { return "\(error)" }
        }
        #expect(await refusal(.video, [RtpEncodingParameters(rid: "a"), RtpEncodingParameters()]).contains("every simulcast encoding needs a rid"))
        #expect(await refusal(.video, [RtpEncodingParameters(rid: "a"), RtpEncodingParameters(rid: "a")]).contains("simulcast rids must differ"))
        #expect(await refusal(.video, [RtpEncodingParameters(rid: "a b"), RtpEncodingParameters(rid: "c")]).contains("needs a rid of letters"))
        #expect(await refusal(.audio, [RtpEncodingParameters(rid: "a"), RtpEncodingParameters(rid: "b")]).contains("simulcast is for video"))
        #expect(await refusal(.video, (0..<5).map { RtpEncodingParameters(rid: "r\($0)") }).contains("1 to 4 encodings"))
        #expect(await refusal(.video, [RtpEncodingParameters(rid: "a", scaleResolutionDownBy: 0.5), RtpEncodingParameters(rid: "b")])
            .contains("scaleResolutionDownBy must be ≥ 1"))

        let t = try await pc.addTransceiver(.video, TransceiverInit(sendEncodings: Self.layers))
        var p = t.sender.parameters
        #expect(p.encodings.map(\.rid) == ["l", "m", "h"])
        p.encodings[0].maxBitrate = 100_000
        try t.sender.setParameters(p)
        p.encodings.removeLast()
        #expect(throws: PeerConnectionError.self) { try t.sender.setParameters(p) }
        await pc.close()
    }

    @Test func theRelayTakesTheLayersAndEachPlayerDecodesItsOwnSize() async throws {
        let sim = Simulation()
        let relay = try sim.relay()
        let (pub, t, source) = try await publisher(sim)
        let answer = try await sim.exchange(relay, pub, endpoint: "whip", stream: "sc")
        #expect(answer.contains("a=simulcast:recv l;m;h"), "\(answer)")
        #expect(t.sender.simulcastRIDs == ["l", "m", "h"])

        var players: [PeerConnection] = []
        var logs: [OrientationLog] = []
        for query in ["&layer=low", "&layer=mid", ""] {
            let pc = try sim.peer()
            let video = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
            _ = try await sim.exchange(relay, pc, endpoint: "whep", stream: "sc", query: query)
            let log = OrientationLog()
            try #require(video.receiver.videoTrack).addRenderer(log)
            players.append(pc)
            logs.append(log)
        }
        let capturer = TestPatternCapturer()
        var sent = 0
        while logs.contains(where: { $0.all.count < 5 }) && sent < 300 {
            deliverFrames(patternFrames(capturer, count: 1, from: sent, rotation: .r0), into: source, on: sim)
            sent += 1
        }
        let sizes = logs.map { Set($0.all.map { "\($0.width)x\($0.height)" }) }
        let streams = String(decoding: await sim.request(relay, "GET", "/api/v1/streams/").body, as: UTF8.self)
        #expect(sizes == [["160x90"], ["320x180"], ["640x360"]], "after \(sent) frames: \(sizes)\n\(streams)")

        let out = await pub.getStats().ofType("outbound-rtp")
        let byRID = Dictionary(out.compactMap { s in s.string("rid").map { ($0, s) } }) { a, _ in a }
        #expect(Set(byRID.keys) == ["l", "m", "h"], "\(out)")
        #expect(byRID["l"]?.int("frameWidth") == 160 && byRID["m"]?.int("frameWidth") == 320 && byRID["h"]?.int("frameWidth") == 640)
        #expect(byRID.values.allSatisfy { ($0.int("framesEncoded") ?? 0) > 0 && ($0.int("packetsSent") ?? 0) > 0 })
        #expect(Set(byRID.values.compactMap { $0.int("ssrc") }).count == 3, "one SSRC per layer")

        // The relay reports on each layer's SSRC: one remote-inbound-rtp per layer, tied to its outbound-rtp.
        for _ in 0..<75 { deliverFrames(patternFrames(capturer, count: 1, from: sent, rotation: .r0), into: source, on: sim); sent += 1 }
        let stats = await pub.getStats()
        let remote = stats.ofType("remote-inbound-rtp")
        let layerOf = Dictionary(stats.ofType("outbound-rtp").compactMap { s in s.string("rid").map { (s.id, $0) } }) { a, _ in a }
        #expect(remote.count == 3 && Set(remote.compactMap { $0.string("localId").flatMap { layerOf[$0] } }) == ["l", "m", "h"],
                "\(remote)")
        for r in remote {
            let local = stats.ofType("outbound-rtp").first { $0.id == r.string("localId") }
            #expect(r.int("ssrc") == local?.int("ssrc") && r.int("packetsLost") == 0, "\(r)")
        }
        for pc in players { await pc.close() }
        await pub.close()
        await relay.stop()
    }

    @Test func aPeerThatRefusesSimulcastGetsTheLargestLayerAlone() async throws {
        let sim = Simulation()
        let (pub, t, source) = try await publisher(sim)
        let peer = try sim.peer()   // receiveSimulcast off: the answer has no a=simulcast
        try await sim.negotiate(pub, peer)
        try sim.connect(pub, peer)
        #expect(t.sender.simulcastRIDs.isEmpty)
        #expect(peer.localDescription?.sdp.contains("a=simulcast") == false)
        let log = OrientationLog()
        try #require(peer.transceivers.first?.receiver.videoTrack).addRenderer(log)
        let capturer = TestPatternCapturer()
        deliverFrames(patternFrames(capturer, count: 10, from: 0, rotation: .r0), into: source, on: sim)
        #expect(sim.run(within: .seconds(2)) { log.all.count >= 8 })
        #expect(!log.all.isEmpty && log.all.allSatisfy { $0.width == 640 && $0.height == 360 })
        let out = await pub.getStats().ofType("outbound-rtp")
        #expect(out.count == 1 && out.first?.string("rid") == nil && out.first?.int("frameWidth") == 640, "\(out)")
        await pub.close()
        await peer.close()
    }

    // MARK: the split of the estimate (pure)

    private func split(_ total: Int, wasOn: Set<Int> = [0, 1, 2]) -> [Int] {
        let layers = SimulcastAllocation.layers(of: Self.layers, indices: [0, 1, 2], width: 1280, height: 720,
                                                wasOn: wasOn.contains)
        #expect(layers.map(\.index) == [0, 1, 2], "smallest first")
        return SimulcastAllocation.split(total, layers.map(\.layer))
    }

    @Test func theEstimateFillsTheLowestLayerFirst() {
        // 320x180: 30k/150k/200k, 640x360: 150k/500k/700k, 1280x720: 600k/2.5M/2.5M.
        #expect(split(100_000) == [100_000, 0, 0], "the lowest layer always sends")
        #expect(split(250_000) == [200_000, 0, 0], "the middle layer needs its minimum past the lowest's target")
        #expect(split(400_000) == [150_000, 250_000, 0])
        #expect(split(1_000_000) == [150_000, 700_000, 0], "the top layer that sends takes up to its maximum")
        #expect(split(1_300_000) == [150_000, 500_000, 650_000])
        #expect(split(10_000_000) == [150_000, 500_000, 2_500_000])
    }

    @Test func aLayerComesBackOnlyPastItsMinimumWithRoomToSpare() {
        // 150k + 500k below the top layer; its minimum 600k: on again only from 650k + 720k.
        #expect(split(1_300_000, wasOn: [0, 1]) == [150_000, 700_000, 0])
        #expect(split(1_400_000, wasOn: [0, 1]) == [150_000, 500_000, 750_000])
        #expect(split(1_300_000, wasOn: [0, 1, 2]) == [150_000, 500_000, 650_000], "a layer that sends stays on")
    }

    @Test func anEncodingsOwnLimitsOverrideTheDefaults() {
        var layers = Self.layers
        layers[0].maxBitrate = 100_000
        layers[2].minBitrate = 1_000_000
        let rates = SimulcastAllocation.layers(of: layers, indices: [0, 1, 2], width: 1280, height: 720) { _ in true }
        #expect(rates[0].layer.rates == .init(min: 30_000, target: 100_000, max: 100_000))
        #expect(rates[2].layer.rates == .init(min: 1_000_000, target: 2_500_000, max: 2_500_000))
        #expect(SimulcastAllocation.split(1_500_000, rates.map(\.layer)) == [100_000, 700_000, 0])
    }
}
