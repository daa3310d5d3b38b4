import Capture
import Media
import PeerConnection
import SessionSupport
import Testing

@Suite("REMB for peers without transport-cc")
struct RembTests {
    /// `a` sends test-pattern video with `codec` to `b`, both connected on `sim`; frames come
    /// from `pattern` as the test captures them.
    func sending(_ codec: RtpCodecCapability, on sim: Simulation) async throws
        -> (a: PeerConnection, b: PeerConnection, pattern: TestPatternCapturer) {
        let a = try sim.peer(), b = try sim.peer()
        let source = VideoSource()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [codec])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try encodeEveryFrame(t.sender)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        return (a, b, TestPatternCapturer(delegate: source))
    }

    /// Captures 320x180 frames at 30 fps of virtual time: frame `i` goes at i × 33.3 ms.
    func capture(_ pattern: TestPatternCapturer, frame i: Int, on sim: Simulation) {
        pattern.captureFrame(at: Int64(i) * 33_333_333, width: 320, height: 180)
        sim.advance(by: framePeriod)
    }

    /// A sender whose codec takes goog-remb but not transport-cc (aiortc's shape): the receiver
    /// estimates its video and sends REMB; the sender's estimator takes it as its bound.
    @Test("a goog-remb-only sender gets REMB from the receiver")
    func rembOnlyPeerGetsREMB() async throws {
        let sim = Simulation()
        let vp8 = RtpCodecCapability(mimeType: "video/VP8", clockRate: 90000,
                                     rtcpFeedback: [.remb, .nack, .pli], preferredPayloadType: 96)
        let (a, b, pattern) = try await sending(vp8, on: sim)
        var sent = 0
        var estimate: Int?
        // At most 5 s of video; stats looked at every 100 ms.
        for i in 0..<150 where sent == 0 || estimate == nil {
            capture(pattern, frame: i, on: sim)
            guard i % 3 == 2 else { continue }
            sent = await b.getStats().ofType("transport").first?.int("rembSent") ?? 0
            estimate = await a.getStats().ofType("candidate-pair").compactMap { $0.int("availableOutgoingBitrate") }.first
        }
        #expect(sent > 0, "the receiver sent no REMB")
        #expect((estimate ?? 0) > 100_000, "the sender has no estimate: \(String(describing: estimate))")
        await a.close()
        await b.close()
    }

    /// With transport-cc on the codec (Chromium's shape) the receiver leaves it to the sender.
    @Test("a transport-cc sender gets no REMB")
    func transportCCPeerGetsNoREMB() async throws {
        let sim = Simulation()
        let (a, b, pattern) = try await sending(.vp8, on: sim)
        for i in 0..<45 { capture(pattern, frame: i, on: sim) }   // 1.5 s
        let stats = try #require(await b.getStats().ofType("transport").first)
        #expect(stats.int("rembSent") == 0)
        #expect(stats.int("transportFeedbackSent") ?? 0 > 10)
        await a.close()
        await b.close()
    }

    /// A pass-through sender (a relay's player) forwards outside the pacer, and its owner reads
    /// the peer's REMB itself: REMB alone leaves its congestion controller idle (no estimator, no
    /// 25 ms tick — at 480 players a third of the relay's own CPU). A sender that encodes does
    /// estimate from it.
    @Test("REMB alone makes an encoding sender estimate, not a pass-through one")
    func passThroughSenderLeavesREMBToItsOwner() async throws {
        let vp8 = RtpCodecCapability(mimeType: "video/VP8", clockRate: 90000,
                                     rtcpFeedback: [.remb, .nack, .pli], preferredPayloadType: 96)
        for pipeline in [false, true] {
            let sim = Simulation()
            // `a` answers `b`'s offer to receive as the relay answers a player by default: it
            // sends, without transport-cc.
            let a = try sim.peer { config in
                config.mediaPipeline = pipeline
                config.transportWideCC = false
                config.remoteTransceiverDirection = .sendonly
                config.videoCodecs = [vp8]
            }
            let b = try sim.peer()
            _ = try await b.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [vp8])
            try await sim.negotiate(b, a)
            try sim.connect(a, b)
            sim.advance(by: .seconds(1))
            let transport = try #require(await a.getStats().ofType("transport").first)
            #expect((transport.string("delayState") != nil) == pipeline, "media pipeline \(pipeline): \(transport)")
            await a.close()
            await b.close()
        }
    }
}
