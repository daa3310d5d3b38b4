import RTP
import Testing
@testable import RTPMedia

@Suite struct StreamTimingTests {
    /// Sender clock 1000 s ahead of ours; video arrives 150 ms after capture, audio 40 ms:
    /// video plays 110 ms late, whatever the clock offset.
    @Test func offsetIsTheDifferenceOfTransitTimes() throws {
        let sender = 5_000.0, receiver = 4_000.0   // seconds since 1900 at capture time 0
        var video = StreamTiming(clockRate: 90000), audio = StreamTiming(clockRate: 48000)
        video.senderReport(ntp: NTPTime.ntp(secondsSince1900: sender), rtpTimestamp: 1_000)
        audio.senderReport(ntp: NTPTime.ntp(secondsSince1900: sender), rtpTimestamp: 7_000)
        // Captured 2 s after the report.
        video.packet(rtpTimestamp: 1_000 + 180_000, arrivalNTP: NTPTime.ntp(secondsSince1900: receiver + 2.150))
        audio.packet(rtpTimestamp: 7_000 + 96_000, arrivalNTP: NTPTime.ntp(secondsSince1900: receiver + 2.040))
        let offset = try #require(StreamTiming.offset(video: video, audio: audio))
        #expect(abs(offset - 0.110) < 0.001)
        // An older (retransmitted) packet does not move the newest capture.
        video.packet(rtpTimestamp: 1_000 + 90_000, arrivalNTP: NTPTime.ntp(secondsSince1900: receiver + 2.5))
        #expect(abs((StreamTiming.offset(video: video, audio: audio) ?? 0) - 0.110) < 0.001)
    }

    @Test func noReportNoOffset() {
        var video = StreamTiming(clockRate: 90000)
        video.packet(rtpTimestamp: 5, arrivalNTP: NTPTime.ntp(secondsSince1900: 10))
        #expect(video.transitSeconds == nil)
        #expect(StreamTiming.offset(video: video, audio: StreamTiming(clockRate: 48000)) == nil)
    }
}
