import Media
import PeerConnection
import SessionSupport
import Testing
import Transport

/// Media after a short outage of one peer's path (issue 21, part 1), on simulated time: ICE goes
/// `disconnected` and back with no restart, and the video resumes without a keyframe storm and
/// without the send-side estimate starting over from what the outage left of it.
@Suite("Outage resume")
struct OutageResumeTests {
    @Test("after a 6 s outage the estimate is what it was before, not what the outage left of it")
    func resumesCleanly() async throws {
        let sim = Simulation()
        let endpoint = Holder<VirtualEndpoint>()
        let a = try sim.peer({ $0.iceRestartAfter = nil }, endpoint: { endpoint.value = $0 }), b = try sim.peer()
        let source = VideoSource()
        try encodeEveryFrame(try await a.addTrack(VideoTrack(id: "v", source: source), codecs: [.vp8]))
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let arrivals = ArrivalLog { [loop = sim.loop] in loop.now }
        try #require(b.transceivers.first?.receiver.videoTrack).addRenderer(arrivals)
        // A 1.2 Mb/s uplink: the estimate settles below the senders' maximum, where a collapse shows.
        let io = try #require(endpoint.value)
        sim.loop.perform { io.uplink.conditions.rate = 1_200_000; io.uplink.conditions.delay = .milliseconds(20) }
        let feed = PatternFeed(sim, into: source, width: 1280, height: 720)
        feed.run(for: .seconds(12))
        let estimate = { await a.getStats().ofType("candidate-pair").compactMap { $0.int("availableOutgoingBitrate") }.first ?? 0 }
        let pli = { await a.getStats().ofType("outbound-rtp").compactMap { $0.int("pliCount") }.reduce(0, +) }
        // The estimate saw-tooths around the link's rate (AIMD): one sample may be a peak above
        // it. "Before" is the median over the last 3 s, the level the outage must not lower.
        var samples: [Int] = []
        for _ in 0..<10 {
            feed.run(for: .milliseconds(300))
            samples.append(await estimate())
        }
        let before = (samples.sorted()[samples.count / 2], await pli(), arrivals.count)
        #expect(before.0 > 0 && before.2 > 100)

        sim.loop.perform {
            io.uplink.blackHole(for: .seconds(6))
            io.downlink.blackHole(for: .seconds(6))
        }
        #expect(feed.run(within: .seconds(6)) { a.iceConnectionState == .disconnected })
        // Usually at the outage's end; congestion right after it can keep consent unanswered longer.
        #expect(feed.run(within: .seconds(15)) { [.connected, .completed].contains(a.iceConnectionState) })
        let back = sim.loop.now
        // The first second back: what the encoders are given, before anything new is learned.
        var lowest = Int.max
        for _ in 0..<10 {
            feed.step()
            feed.step()
            feed.step()
            lowest = min(lowest, await estimate())
        }
        #expect(arrivals.all.contains { $0 > back }, "video resumes")
        print("outage 6 s: estimate before \(before.0) bps, lowest in the first second back \(lowest) bps; video back \(arrivals.all.first { $0 > back }.map { $0 - back } ?? .zero) after the path")
        #expect(Double(lowest) >= 0.8 * Double(before.0), "estimate \(before.0) → \(lowest)")
        feed.run(for: .seconds(3))
        let plis = await pli() - before.1
        print("outage 6 s: \(plis) PLIs in the 4 s after the return")
        // One request, answered by one keyframe: resends of what the keyframe made useless used
        // to go ahead of it into the link, and the receiver asked twice more while it waited.
        #expect(plis <= 1)
        await a.close()
        await b.close()
    }
}
