import Capture
import Media
import PeerConnection
import SessionSupport
import Testing
import Transport

@Suite("Media under packet loss")
struct LossTests {
    @Test("10% loss on the receiver's way in: NACKs recover the packets, frames decode in order")
    func nackRecoversLoss() async throws {
        let sim = Simulation(seed: 7)
        let receiverLink = Holder<VirtualEndpoint>()
        let a = try sim.peer()
        let b = try sim.peer(endpoint: { receiverLink.value = $0 })
        let source = VideoSource()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.vp8])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try encodeEveryFrame(t.sender)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        // Once connected (the DTLS handshake would retransmit on OpenSSL's own clock), 10% of
        // everything on the receiver's way in is lost: RTP, RTCP and STUN alike.
        let link = try #require(receiverLink.value)
        sim.loop.perform { link.downlink.conditions = LinkConditions(loss: 0.10) }
        let log = FrameLog()
        try #require(b.transceivers.first?.receiver.videoTrack).addRenderer(log)
        let capturer = TestPatternCapturer(delegate: source)
        for i in 0..<40 {
            capturer.captureFrame(at: Int64(i) * 33_333_333, width: 640, height: 360)
            sim.advance(by: .milliseconds(33))
        }
        sim.run(within: .seconds(2)) { log.all.count >= 40 }
        let numbers = log.all.compactMap(\.number)
        #expect(numbers.count >= 38, "decoded \(numbers.count) of 40 frames")
        #expect(numbers == numbers.sorted())
        #expect(sim.loop.perform { link.downlink.counters.lost } > 0)
        let inbound = try #require(await b.getStats().ofType("inbound-rtp").first)
        #expect(inbound.int("nackCount") ?? 0 > 0, "no NACK was sent: \(inbound.values)")
        let outbound = try #require(await a.getStats().ofType("outbound-rtp").first)
        #expect(outbound.int("retransmittedPacketsSent") ?? 0 > 0)
        // Both sides negotiated rtx: the repairs travel on the RTX stream (RFC 4588) and are
        // unwrapped into the frames above.
        let transport = try #require(await b.getStats().ofType("transport").first)
        #expect(transport.int("rtxPacketsReceived") ?? 0 > 0, "no RTX packet arrived: \(transport.values)")
        #expect(inbound.int("retransmittedPacketsReceived") ?? 0 > 0)
        #expect(inbound.int("jitterBufferEmittedCount") ?? 0 >= 38)
        #expect(inbound.double("jitterBufferDelay") ?? 0 > 0)
        await a.close()
        await b.close()
    }
}
