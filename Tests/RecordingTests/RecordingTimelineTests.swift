import RTP
import Testing
@testable import Recording

/// The timeline on made-up clocks: two streams of one sender, their sender reports, and the
/// network's delays, all chosen by the test.
struct RecordingTimelineTests {
    /// NTP seconds → the 32.32 fixed point of a sender report.
    static func ntp(_ seconds: Double) -> UInt64 { UInt64(seconds * 4_294_967_296) }

    /// A sender of 30 fps video and 20 ms Opus; capture time t (s) ↔ RTP via each base.
    struct Sender {
        var videoBase: UInt32 = 0x1234_5678
        var audioBase: UInt32 = 0xFFFF_0000
        /// The audio clock's rate error (1e-4 = 100 ppm fast).
        var audioDrift = 0.0
        let ntpEpoch = 3_900_000_000.0
        func videoRTP(_ t: Double) -> UInt32 { videoBase &+ UInt32(truncatingIfNeeded: Int64((t * 90_000).rounded())) }
        func audioRTP(_ t: Double) -> UInt32 { audioBase &+ UInt32(truncatingIfNeeded: Int64((t * 48_000 * (1 + audioDrift)).rounded())) }
    }

    @Test func streamsAreAlignedBySenderReportsNotArrival() {
        var tl = RecordingTimeline()
        let s = Sender()
        // Audio arrives 120 ms after video (a slower path); the reports say when each was captured.
        tl.senderReport(track: .video, ssrc: 1, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.videoRTP(0))
        tl.senderReport(track: .audio, ssrc: 2, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.audioRTP(0))
        // Arrival order: audio 120 ms behind, video 10 ms; polled as a receiver would.
        var events: [(arrival: Double, video: Bool, t: Double)] = []
        for k in 0..<150 { events.append((10 + Double(k) * 0.02 + 0.12, false, Double(k) * 0.02)) }
        for k in 0..<90 { events.append((10 + Double(k) / 30 + 0.01, true, Double(k) / 30)) }
        var out: [RecordingTimeline.Sample] = []
        for e in events.sorted(by: { $0.arrival < $1.arrival }) {
            if e.video {
                tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(e.t), arrival: e.arrival, data: [0], isKeyframe: e.t == 0)
            } else {
                tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(e.t), arrival: e.arrival, data: [0x78, 1], isKeyframe: true, duration: 20_000)
            }
            out += tl.poll(now: e.arrival)
        }
        out += tl.flush()
        #expect(tl.clock == .senderReports)
        #expect(tl.tracks == [.video, .audio])
        let video = out.filter { $0.track == .video }
        let audio = out.filter { $0.track == .audio }
        #expect(video.first?.isKeyframe == true)
        #expect(video.first?.time == 0)
        // The audio captured with the first picture is at 0 too, not 120 ms later.
        #expect(audio.first?.time == 0)
        // Every audio packet sits where it was captured.
        for (k, a) in audio.enumerated() { #expect(a.time == Int64(k) * 20_000) }
        // Each track in order (the muxer interleaves the two).
        #expect(zip(video, video.dropFirst()).allSatisfy { $0.time < $1.time })
        #expect(video.count == 90 && audio.count == 150)
    }

    @Test func theFileStartsAtTheFirstKeyframe() {
        var tl = RecordingTimeline()
        let s = Sender()
        tl.senderReport(track: .video, ssrc: 1, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.videoRTP(0))
        tl.senderReport(track: .audio, ssrc: 2, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.audioRTP(0))
        var out: [RecordingTimeline.Sample] = []
        // Audio from t=0, video deltas from t=0, the keyframe at t=0.5.
        for i in 0..<100 {
            let t = Double(i) * 0.02
            tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(t), arrival: t, data: [0x78], isKeyframe: true, duration: 20_000)
            if i % 2 == 0 {
                tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(t), arrival: t, data: [1], isKeyframe: i == 24)
            }
            out += tl.poll(now: t)
        }
        out += tl.flush()
        let video = out.filter { $0.track == .video }
        let audio = out.filter { $0.track == .audio }
        #expect(video.first?.isKeyframe == true)
        #expect(video.first?.time == 0)
        #expect(audio.first?.time == 0)
        #expect(video.count == 38)     // frames 24…98 step 2 (the ones before the keyframe dropped)
        #expect(audio.count == 76)     // 0.48 s…1.98 s
        #expect(tl.statistics.droppedBeforeStart == 12 + 24)
    }

    @Test func rtpTimestampsWrapAround() {
        var tl = RecordingTimeline()
        var s = Sender()
        s.videoBase = UInt32.max - 45_000   // wraps half a second in
        s.audioBase = UInt32.max - 24_000
        tl.senderReport(track: .video, ssrc: 1, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.videoRTP(0))
        tl.senderReport(track: .audio, ssrc: 2, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.audioRTP(0))
        var out: [RecordingTimeline.Sample] = []
        for i in 0..<60 {
            let t = Double(i) / 30
            tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(t), arrival: t, data: [1], isKeyframe: i == 0)
            tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(t), arrival: t, data: [0x78], isKeyframe: true, duration: 20_000)
            out += tl.poll(now: t)
        }
        out += tl.flush()
        let video = out.filter { $0.track == .video }
        #expect(video.count == 60)
        for (k, v) in video.enumerated() { #expect(abs(v.time - Int64((Double(k) / 30 * 1e6).rounded())) <= 1) }
    }

    @Test func aStreamWithoutReportsFallsBackToArrivalForTheWholeFile() {
        var tl = RecordingTimeline()
        let s = Sender()
        tl.senderReport(track: .video, ssrc: 1, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.videoRTP(0))
        var out: [RecordingTimeline.Sample] = []
        for i in 0..<200 {   // 4 s, no audio report ever
            let t = Double(i) * 0.02
            tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(t), arrival: t + 0.05, data: [0x78], isKeyframe: true, duration: 20_000)
            if i % 2 == 0 { tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(t), arrival: t, data: [1], isKeyframe: i == 0) }
            let got = tl.poll(now: t + 0.05)
            if t < 2.4 { #expect(got.isEmpty) }   // waiting for the audio's report
            out += got
        }
        out += tl.flush()
        #expect(tl.clock == .arrival)
        let audio = out.filter { $0.track == .audio }
        // On arrival times the audio lands 50 ms late, as it arrived.
        #expect(audio.first.map { abs($0.time - 50_000) <= 1 } == true)
        #expect(out.filter { $0.track == .video }.count == 100)
    }

    /// An hour with the sender's audio clock 100 ppm fast (360 ms an hour): the reports follow it,
    /// and so does the file, so audio and video captured together stay within 20 ms.
    @Test func anHourWithAudioClockDriftStaysInSync() {
        var tl = RecordingTimeline()
        var s = Sender()
        s.audioDrift = 1e-4
        var lastReport = -10.0
        var videoTimes: [Int: Int64] = [:]   // minute → file time of the frame captured then
        var audioTimes: [Int: Int64] = [:]
        var written = 0
        func take(_ samples: [RecordingTimeline.Sample]) {
            written += samples.count
            for x in samples where x.data.count == 2 {
                let minute = Int(x.data[1])
                if x.track == .video { videoTimes[minute] = x.time } else { audioTimes[minute] = x.time }
            }
        }
        let hour = 3600 * 50
        for i in 0...hour {
            let t = Double(i) * 0.02
            if t - lastReport >= 5 {
                tl.senderReport(track: .video, ssrc: 1, ntp: Self.ntp(s.ntpEpoch + t), rtpTimestamp: s.videoRTP(t))
                tl.senderReport(track: .audio, ssrc: 2, ntp: Self.ntp(s.ntpEpoch + t), rtpTimestamp: s.audioRTP(t))
                lastReport = t
            }
            // Samples captured on each whole minute are marked, to compare their file times.
            let mark: [UInt8] = i % 3000 == 0 ? [0, UInt8(i / 3000)] : [0]
            tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(t), arrival: t + 0.03, data: mark, isKeyframe: true, duration: 20_000)
            if i % 5 == 0 {   // 10 fps keeps the hour quick; the clock maths is the same
                tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(t), arrival: t + 0.01, data: mark, isKeyframe: i == 0)
            }
            if i % 10 == 0 { take(tl.poll(now: t + 0.03)) }
        }
        take(tl.flush())
        #expect(videoTimes.count == 61 && audioTimes.count == 61)
        for minute in 0...60 {
            let v = videoTimes[minute] ?? -1, a = audioTimes[minute] ?? -1_000_000
            #expect(abs(v - a) <= 20_000, "minute \(minute): video \(v) µs, audio \(a) µs")
            #expect(abs(v - Int64(minute) * 60_000_000) <= 1_000)
        }
        #expect(written == hour + 1 + hour / 5 + 1)
    }

    @Test func lateAndDuplicateSamplesAreOrderedOrDropped() {
        var tl = RecordingTimeline()
        let s = Sender()
        tl.senderReport(track: .video, ssrc: 1, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.videoRTP(0))
        tl.senderReport(track: .audio, ssrc: 2, ntp: Self.ntp(s.ntpEpoch), rtpTimestamp: s.audioRTP(0))
        tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(0), arrival: 0, data: [1], isKeyframe: true)
        // Audio packets 0, 2, 1 (reordered within the hold), 1 again (a duplicate).
        for (k, arrival) in [(0, 0.0), (2, 0.04), (1, 0.05), (1, 0.06)] {
            tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(Double(k) * 0.02), arrival: arrival, data: [0x78], isKeyframe: true, duration: 20_000)
        }
        let out = tl.poll(now: 0.1) + tl.poll(now: 0.3)
        #expect(out.filter { $0.track == .audio }.map(\.time) == [0, 20_000, 40_000])
        #expect(tl.statistics.droppedStale == 1)
        // A frame from before the last written one, arriving after the hold, is not written back in time.
        tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(1.0), arrival: 1.0, data: [1], isKeyframe: false)
        _ = tl.poll(now: 1.3)
        tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(-0.5), arrival: 1.4, data: [1], isKeyframe: false)
        #expect(tl.poll(now: 1.7).isEmpty)
    }

    @Test func aRestartedSenderContinuesOnItsNewReports() {
        var tl = RecordingTimeline()
        var s = Sender()
        var out: [RecordingTimeline.Sample] = []
        func report(_ t: Double, _ vssrc: UInt32, _ assrc: UInt32) {
            tl.senderReport(track: .video, ssrc: vssrc, ntp: Self.ntp(s.ntpEpoch + t), rtpTimestamp: s.videoRTP(t))
            tl.senderReport(track: .audio, ssrc: assrc, ntp: Self.ntp(s.ntpEpoch + t), rtpTimestamp: s.audioRTP(t))
        }
        report(0, 1, 2)
        for i in 0..<100 {
            let t = Double(i) * 0.02
            tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(t), arrival: t, data: [0x78], isKeyframe: true, duration: 20_000)
            if i % 2 == 0 { tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(t), arrival: t, data: [1], isKeyframe: i == 0) }
            out += tl.poll(now: t)
        }
        // The publisher comes back 3 s later with new SSRCs and new RTP bases.
        s.videoBase = 777
        s.audioBase = 999_999
        var first = true
        for i in 250..<350 {
            let t = Double(i) * 0.02
            if first { report(t, 11, 12); first = false }
            tl.add(track: .audio, ssrc: 12, rtpTimestamp: s.audioRTP(t), arrival: t, data: [0x78], isKeyframe: true, duration: 20_000)
            if i % 2 == 0 { tl.add(track: .video, ssrc: 11, rtpTimestamp: s.videoRTP(t), arrival: t, data: [1], isKeyframe: i == 250) }
            out += tl.poll(now: t)
        }
        out += tl.flush()
        let video = out.filter { $0.track == .video }
        #expect(video.count == 100)
        // The gap is kept: the new stream's first frame is at 5 s, where it was captured.
        #expect(video[50].time == 5_000_000)
        #expect(zip(video, video.dropFirst()).allSatisfy { $0.time < $1.time })
    }

    /// A sender that restarts under the same SSRC with a new RTP base (a relay's rewriter that
    /// keeps the SSRC): neither clock writes the jump into the file as hours of gap.
    @Test(arguments: [true, false])
    func anRTPClockJumpUnderOneSSRCIsNotAGapOfHours(reports: Bool) {
        var tl = RecordingTimeline()
        var s = Sender()
        var out: [RecordingTimeline.Sample] = []
        func report(_ t: Double) {
            guard reports else { return }
            tl.senderReport(track: .video, ssrc: 1, ntp: Self.ntp(s.ntpEpoch + t), rtpTimestamp: s.videoRTP(t))
            tl.senderReport(track: .audio, ssrc: 2, ntp: Self.ntp(s.ntpEpoch + t), rtpTimestamp: s.audioRTP(t))
        }
        func send(_ range: Range<Int>, keyAt: Int) {
            for i in range {
                let t = Double(i) * 0.02
                if i % 50 == 0 { report(t) }
                tl.add(track: .audio, ssrc: 2, rtpTimestamp: s.audioRTP(t), arrival: t, data: [0x78], isKeyframe: true, duration: 20_000)
                if i % 2 == 0 { tl.add(track: .video, ssrc: 1, rtpTimestamp: s.videoRTP(t), arrival: t, data: [1], isKeyframe: i == keyAt) }
                out += tl.poll(now: t)
            }
        }
        send(0..<150, keyAt: 0)
        s.videoBase &+= 0x7000_0000   // hours away on both clocks
        s.audioBase &+= 0x3000_0000
        send(200..<350, keyAt: 200)
        out += tl.flush()
        let video = out.filter { $0.track == .video }
        let last = video.last?.time ?? 0
        #expect(abs(last - 6_980_000) <= 30_000, "the last frame is at \(last) µs, captured at 6.98 s")
        #expect(video.count >= 140)
    }

    @Test func sentSamplesUseTheirCaptureTimes() {
        var tl = RecordingTimeline()
        var out: [RecordingTimeline.Sample] = []
        for i in 0..<50 {
            let t = 100 + Double(i) * 0.02
            tl.add(track: .audio, captureTime: t, data: [0x78], isKeyframe: true, duration: 20_000)
            if i % 2 == 1 { tl.add(track: .video, captureTime: t, data: [1], isKeyframe: i == 1) }
            out += tl.poll(now: t)
        }
        out += tl.flush()
        #expect(tl.clock == .capture)
        #expect(out.first { $0.track == .video }?.time == 0)
        #expect(out.filter { $0.track == .audio }.first?.time == 0)
        #expect(out.filter { $0.track == .video }.count == 25)
    }
}
