import Capture
import Media
@testable import PeerConnection
import SessionSupport
import Testing
import Transport

/// A receive-only stream learns no RTT from receiver reports (it sends nothing to be reported
/// on), so its NACK retries were paced by the 100 ms default: on a 40 ms path a second request
/// went ~60 ms late. It takes the ICE checks' RTT.
@Suite struct ReceiveOnlyNackPacingTests {
    @Test func aReceiveOnlyStreamPacesItsNACKsByTheICERoundTrip() async throws {
        let sim = Simulation()
        // 20 ms each way on the receiver's links from the start, so the checks measure it; 5% loss
        // towards it, so it asks for packets.
        let a = try sim.peer(), b = try sim.peer(endpoint: { link in
            link.uplink.conditions = LinkConditions(delay: .milliseconds(20))
            link.downlink.conditions = LinkConditions(loss: 0.05, delay: .milliseconds(20))
        })
        let videoSource = VideoSource()
        let videoSender = try await a.addTrack(VideoTrack(id: "v", source: videoSource), codecs: [.vp8])
        try encodeEveryFrame(videoSender)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let pattern = TestPatternCapturer(delegate: videoSource)
        for frame in 0..<90 {
            pattern.captureFrame(at: Int64(frame) * 33_333_333, width: 320, height: 180)
            sim.advance(by: .nanoseconds(33_333_333))
        }
        let inbound = try #require(await b.getStats().ofType("inbound-rtp").first { $0["kind"] == .string("video") })
        #expect(inbound.int("nackCount") ?? 0 > 0, "no NACK in 3 s at 5% loss: \(inbound)")
        let paced = try #require(sim.loop.perform { b.media.videoReceive.values.first?.nackPacingRTT }, "no video receive stream")
        #expect(paced >= .milliseconds(39) && paced <= .milliseconds(60), "NACKs paced by a \(paced) RTT on a 40 ms path")
        await a.close()
        await b.close()
    }
}
