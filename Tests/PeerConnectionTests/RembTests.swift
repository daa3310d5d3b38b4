import Capture
import Media
import PeerConnection
import Testing

@Suite("REMB for peers without transport-cc")
struct RembTests {
    /// `a` sends 320x180 test-pattern video with `codec` to `b`, both connected.
    func sending(_ codec: RtpCodecCapability) async throws -> (a: PeerConnection, b: PeerConnection, pattern: TestPatternCapturer) {
        let a = try loopbackPeer(), b = try loopbackPeer()
        let source = VideoSource()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [codec])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try encodeEveryFrame(t.sender)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        let pattern = TestPatternCapturer(delegate: source)
        try pattern.start(width: 320, height: 180, fps: 30)
        return (a, b, pattern)
    }

    /// A sender whose codec takes goog-remb but not transport-cc (aiortc's shape): the receiver
    /// estimates its video and sends REMB; the sender's estimator takes it as its bound.
    @Test("a goog-remb-only sender gets REMB from the receiver")
    func rembOnlyPeerGetsREMB() async throws {
        let vp8 = RtpCodecCapability(mimeType: "video/VP8", clockRate: 90000,
                                     rtcpFeedback: [.remb, .nack, .pli], preferredPayloadType: 96)
        let (a, b, pattern) = try await sending(vp8)
        defer { pattern.stop() }
        var sent = 0
        var estimate: Int?
        let end = ContinuousClock.now.advanced(by: .seconds(5))
        while ContinuousClock.now < end, sent == 0 || estimate == nil {
            try await Task.sleep(for: .milliseconds(100))
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
        let (a, b, pattern) = try await sending(.vp8)
        defer { pattern.stop() }
        try await Task.sleep(for: .milliseconds(1500))
        let stats = try #require(await b.getStats().ofType("transport").first)
        #expect(stats.int("rembSent") == 0)
        #expect(stats.int("transportFeedbackSent") ?? 0 > 10)
        await a.close()
        await b.close()
    }
}
