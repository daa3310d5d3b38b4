import Media
import PeerConnection
import SessionSupport
import Testing
import Transport

/// The estimate outlives a time without active video (simulated time): it is the path's, not
/// the senders'. Interop found it: a track added after the only video transceiver was stopped
/// started at 30 kbit/s (the estimate had been clamped to the audio share) and at 160x120.
@Suite("Congestion bounds")
struct CongestionBoundsTests {
    @Test("deactivating the only video encoding keeps the estimate for when video comes back")
    func estimateSurvivesNoActiveVideo() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let source = VideoSource()
        let sender = try await a.addTrack(VideoTrack(id: "v", source: source), codecs: [.vp8])
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let feed = PatternFeed(sim, into: source, width: 640, height: 360)
        feed.run(for: .seconds(4))
        let estimate = { await a.getStats().ofType("candidate-pair").compactMap { $0.int("availableOutgoingBitrate") }.first ?? 0 }
        let before = await estimate()
        #expect(before >= 2_000_000, "the unconstrained path's estimate: \(before)")

        var parameters = sender.parameters
        parameters.encodings[0].active = false
        try sender.setParameters(parameters)
        feed.run(for: .seconds(2))
        let idle = await estimate()
        parameters.encodings[0].active = true
        try sender.setParameters(parameters)
        feed.run(for: .milliseconds(300))
        let after = await estimate()
        print("estimate \(before) → \(idle) without active video → \(after) back")
        #expect(idle >= before / 2 && after >= before / 2)
        await a.close()
        await b.close()
    }
}
