import Capture
import Media
import PeerConnection
import Testing

@Suite("Audio RTCP and lip sync")
struct LipSyncTests {
    /// Audio and video from one sender: both send sender reports, the receiver reports on both,
    /// and the receiver works out how far apart they play (a few ms on loopback).
    @Test("audio sender/receiver reports flow, and the receiver reports the A/V offset")
    func audioReportsAndSyncOffset() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        let videoSource = VideoSource()
        let tone = ToneCapturer(frequency: 440, level: 0.25)
        try await a.addTrack(AudioTrack(id: "a", source: AudioSource(capturer: tone)))
        let videoSender = try await a.addTrack(VideoTrack(id: "v", source: videoSource), codecs: [.vp8])
        try encodeEveryFrame(videoSender)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        let pattern = TestPatternCapturer(delegate: videoSource)
        try pattern.start(width: 320, height: 180, fps: 30)
        tone.start()
        defer { pattern.stop(); tone.stop() }
        // Reports go once a second: wait for the second round at most 5 s.
        var offset: Double?
        var audioRTT: Double?
        let end = ContinuousClock.now.advanced(by: .seconds(5))
        while ContinuousClock.now < end, offset == nil || audioRTT == nil {
            try await Task.sleep(for: .milliseconds(100))
            offset = await b.getStats().ofType("inbound-rtp").first { $0["kind"] == .string("video") }?.double("avSyncOffset")
            audioRTT = await a.getStats().ofType("remote-inbound-rtp").first { $0["kind"] == .string("audio") }?.double("roundTripTime")
        }
        let measured = try #require(offset, "no A/V offset after 5 s")
        #expect(abs(measured) < 0.2, "A/V offset \(measured) s on loopback")
        #expect(try #require(audioRTT, "no RTT for the audio stream") < 0.1)
        let inboundAudio = try #require(await b.getStats().ofType("inbound-rtp").first { $0["kind"] == .string("audio") })
        #expect(inboundAudio.int("packetsLost") == 0)
        await a.close()
        await b.close()
    }
}
