import Capture
import Media
import PeerConnection
import SessionSupport
import Testing
import Transport

@Suite("Audio RTCP and lip sync")
struct LipSyncTests {
    /// Audio and video from one sender: both send sender reports, the receiver reports on both,
    /// and the receiver works out how far apart they play (nothing but the network between
    /// capture and send here: the same for both streams).
    @Test("audio sender/receiver reports flow, and the receiver reports the A/V offset")
    func audioReportsAndSyncOffset() async throws {
        let sim = Simulation()
        let receiverLink = Holder<VirtualEndpoint>()
        let a = try sim.peer(), b = try sim.peer(endpoint: { receiverLink.value = $0 })
        let videoSource = VideoSource()
        let audioSource = AudioSource()
        try await a.addTrack(AudioTrack(id: "a", source: audioSource))
        let videoSender = try await a.addTrack(VideoTrack(id: "v", source: videoSource), codecs: [.vp8])
        try encodeEveryFrame(videoSender)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        // 20 ms each way between them: a round trip of 40 ms.
        let link = try #require(receiverLink.value)
        sim.loop.perform {
            link.uplink.conditions = LinkConditions(delay: .milliseconds(20))
            link.downlink.conditions = LinkConditions(delay: .milliseconds(20))
        }
        let pattern = TestPatternCapturer(delegate: videoSource)
        let tone = ToneCapturer(frequency: 440, level: 0.25)
        // Audio every 10 ms, video every 33.3 ms, in capture order, as virtual time goes; reports
        // go once a second: the second round within 5 s, stats looked at every 100 ms.
        var offset: Double?
        var audioRTT: Double?
        var audioNs: Int64 = 0, videoNs: Int64 = 0, video = 0, nowNs: Int64 = 0, lookedAt: Int64 = 0
        while nowNs < 5_000_000_000, offset == nil || audioRTT == nil {
            if audioNs <= videoNs {
                audioSource.deliver(tone.nextFrame(timestampNs: audioNs))
                audioNs += 10_000_000
            } else {
                pattern.captureFrame(at: videoNs, width: 320, height: 180)
                video += 1
                videoNs = Int64(video) * 33_333_333
            }
            let next = min(audioNs, videoNs)
            sim.advance(by: .nanoseconds(next - nowNs))
            nowNs = next
            guard nowNs - lookedAt >= 100_000_000 else { continue }
            lookedAt = nowNs
            offset = await b.getStats().ofType("inbound-rtp").first { $0["kind"] == .string("video") }?.double("avSyncOffset")
            audioRTT = await a.getStats().ofType("remote-inbound-rtp").first { $0["kind"] == .string("audio") }?.double("roundTripTime")
        }
        let measured = try #require(offset, "no A/V offset after 5 s")
        #expect(abs(measured) < 0.01, "A/V offset \(measured) s, with both streams on the same links")
        let rtt = try #require(audioRTT, "no RTT for the audio stream")
        #expect(rtt < 0.1, "audio RTT \(rtt) s")
        #expect(rtt > 0.039, "audio RTT \(rtt) s, under the links' 40 ms")
        let inboundAudio = try #require(await b.getStats().ofType("inbound-rtp").first { $0["kind"] == .string("audio") })
        #expect(inboundAudio.int("packetsLost") == 0)
        #expect(inboundAudio.int("totalSamplesReceived") ?? 0 > 0, "the tone was decoded")
        await a.close()
        await b.close()
    }
}
