import Media
import PeerConnection
import SessionSupport
import Testing
import Transport

/// A sender whose path comes back from a disconnection goes on from a keyframe at once: what it
/// sent into the outage is lost, and the peer's keyframe request may have been lost with it.
@Suite struct OutageKeyframeTests {
    @Test func backFromDisconnectedTheSenderEncodesAKeyframeUnasked() async throws {
        let sim = Simulation()
        let endpoint = Holder<VirtualEndpoint>()
        let a = try sim.peer({ $0.iceRestartAfter = nil }, endpoint: { endpoint.value = $0 })
        let b = try sim.peer { $0.mediaPipeline = false }   // decodes nothing, so never asks for a keyframe
        let source = VideoSource()
        try encodeEveryFrame(try await a.addTrack(VideoTrack(id: "v", source: source), codecs: [.vp8]))
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let feed = PatternFeed(sim, into: source, width: 320, height: 180)
        feed.run(for: .seconds(2))
        let keyframes = { await a.getStats().ofType("outbound-rtp").compactMap { $0.int("keyFramesEncoded") }.reduce(0, +) }
        let before = await keyframes()
        feed.run(for: .seconds(2))
        #expect(await keyframes() == before, "no keyframe while the path is up and nobody asks")

        let io = try #require(endpoint.value)
        sim.loop.perform {
            io.uplink.blackHole(for: .seconds(4))
            io.downlink.blackHole(for: .seconds(4))
        }
        #expect(feed.run(within: .seconds(5)) { a.iceConnectionState == .disconnected })
        #expect(await keyframes() == before, "none into the outage")
        #expect(feed.run(within: .seconds(5)) { [.connected, .completed].contains(a.iceConnectionState) })
        feed.step()
        feed.step()
        #expect(await keyframes() == before + 1, "one keyframe on the return")
        await a.close()
        await b.close()
    }
}
