import AudioCodecs
import Capture
import Codecs
import Foundation
import Media
import RTP
import RTPMedia
import TestSupport
import Testing
@testable import Recording

/// Real encoders into real files, read back with libavformat and decoded.
struct RecorderFileTests {
    /// `seconds` of 30 fps test pattern and 20 ms Opus, as encoded frames with capture times (s).
    static func media(_ codec: VideoCodecType, seconds: Double, width: Int = 320, height: Int = 180)
        throws -> (video: [(Double, EncodedFrame)], audio: [(Double, [UInt8])]) {
        let settings = VideoEncoderSettings(width: width, height: height, framerate: 30, bitrate: 500_000)
        let encoder: any VideoEncoder = codec == .h264 ? try OpenH264Encoder(settings: settings) : try VP8Encoder(settings: settings)
        var video: [(Double, EncodedFrame)] = []
        for i in 0..<Int(seconds * 30) {
            let buffer = VideoFrameBuffer(format: .i420, width: width, height: height)
            TestPattern.render(frameNumber: UInt32(i), wallClockMs: UInt64(i) * 33, width: width, height: height, into: buffer)
            let t = Double(i) / 30
            let frame = VideoFrame(buffer: buffer, timestampNs: Int64(t * 1e9))
            if let e = try encoder.encode(frame, rtpTimestamp: UInt32(i * 3000), forceKeyframe: i == 0) { video.append((t, e)) }
        }
        let opus = try OpusEncoder()
        var audio: [(Double, [UInt8])] = []
        for k in 0..<Int(seconds * 50) {
            let samples = (0..<960).map { n in Int16(8000 * sin(Double(k * 960 + n) * 2 * .pi * 440 / 48000)) }
            audio.append((Double(k) * 0.02, try opus.encode(AudioFrame(samples: .int16(samples), timestampNs: Int64(k) * 20_000_000))))
        }
        return (video, audio)
    }

    /// Writes through the timeline (capture clock) into `path`; returns the writer unfinished.
    static func write(_ path: String, _ codec: VideoCodecType, seconds: Double, finish: Bool = true) throws -> ContainerWriter? {
        let (video, audio) = try media(codec, seconds: seconds)
        var tl = RecordingTimeline()
        var samples: [RecordingTimeline.Sample] = []
        var v = video.makeIterator(), a = audio.makeIterator()
        var nv = v.next(), na = a.next()
        while nv != nil || na != nil {
            if let (t, f) = nv, na == nil || t <= na!.0 {
                tl.add(track: .video, captureTime: t, data: f.data, isKeyframe: f.isKeyframe)
                samples += tl.poll(now: t)
                nv = v.next()
            } else if let (t, p) = na {
                tl.add(track: .audio, captureTime: t, data: p, isKeyframe: true, duration: SampleFormat.opusDuration(p))
                samples += tl.poll(now: t)
                na = a.next()
            }
        }
        samples += tl.flush()
        let key = samples.first { $0.track == .video }!
        let size = KeyframeSize.of(key.data, codec: codec)!
        let writer = try ContainerWriter(path: path, container: RecordingContainer(path: path)!,
                                         video: .init(codec: codec, width: size.width, height: size.height,
                                                      extradata: codec == .h264 ? SampleFormat.parameterSets(key.data) : []),
                                         audioChannels: 1)
        for s in samples { try writer.write(s) }
        if finish { try writer.finish(); return nil }
        return writer
    }

    @Test(arguments: [("mp4", VideoCodecType.h264), ("webm", .vp8), ("mkv", .h264), ("mkv", .vp8)])
    func containersHoldTheStreamAsSent(ext: String, codec: VideoCodecType) throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("out.\(ext)")
        _ = try Self.write(path, codec, seconds: 3)
        let probe = try FileProbe(path)
        let video = try #require(probe.video)
        let audio = try #require(probe.audio)
        #expect(video.codec == (codec == .h264 ? "h264" : "vp8"))
        #expect(video.width == 320 && video.height == 180)
        #expect(video.packets == 90)
        #expect(audio.codec == "opus" && audio.channels == 1)
        #expect(audio.packets == 150)
        // Both start at 0 and end where the media did.
        #expect(abs((video.first ?? 1) - (audio.first ?? -1)) <= 0.001)
        #expect(abs((video.last ?? 0) - 89.0 / 30) <= 0.002)
        #expect(abs((audio.last ?? 0) - 2.98) <= 0.002)
        // The pictures decode to the test pattern, frame by frame.
        let reader = try LibAVVideoReader(path: path)
        var read: [UInt32] = []
        while let frame = try reader.readFrame() { if let n = TestPattern.read(frame)?.frameNumber { read.append(n) } }
        #expect(read == Array(0..<90))
    }

    /// A camera switch or a layer change: the size changes at a keyframe carrying new parameter
    /// sets in band; the file decodes through it, both sizes, every frame.
    @Test(arguments: [("mp4", VideoCodecType.h264), ("webm", .vp8)])
    func aResolutionChangeMidStreamStaysDecodable(ext: String, codec: VideoCodecType) throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("switch.\(ext)")
        var tl = RecordingTimeline()
        var samples: [RecordingTimeline.Sample] = []
        for (part, size) in [(0, (320, 180)), (1, (640, 360))] {
            let settings = VideoEncoderSettings(width: size.0, height: size.1, framerate: 30, bitrate: 800_000)
            let encoder: any VideoEncoder = codec == .h264 ? try OpenH264Encoder(settings: settings) : try VP8Encoder(settings: settings)
            for i in part * 30..<(part + 1) * 30 {
                let buffer = VideoFrameBuffer(format: .i420, width: size.0, height: size.1)
                TestPattern.render(frameNumber: UInt32(i), wallClockMs: UInt64(i) * 33, width: size.0, height: size.1, into: buffer)
                let t = Double(i) / 30
                let e = try #require(try encoder.encode(VideoFrame(buffer: buffer, timestampNs: Int64(t * 1e9)), rtpTimestamp: UInt32(i * 3000),
                                                        forceKeyframe: i == part * 30))
                tl.add(track: .video, captureTime: t, data: e.data, isKeyframe: e.isKeyframe)
                samples += tl.poll(now: t)
            }
        }
        samples += tl.flush()
        let writer = try ContainerWriter(path: path, container: RecordingContainer(path: path)!,
                                         video: .init(codec: codec, width: 320, height: 180,
                                                      extradata: codec == .h264 ? SampleFormat.parameterSets(samples[0].data) : []),
                                         audioChannels: nil)
        for x in samples { try writer.write(x) }
        try writer.finish()
        #expect(try FileProbe(path).video?.packets == 60)
        #expect(try FileProbe(path).video?.keyframes == 2)
        let reader = try LibAVVideoReader(path: path)
        var frames = 0
        while try reader.readFrame() != nil { frames += 1 }
        #expect(frames == 60)
    }

    /// The timeline keeps a track's times strictly increasing in microseconds (a late frame gets
    /// the last time + 1 µs); the container's clock is coarser (90 kHz, 1 ms in Matroska), so
    /// the writer must keep them increasing there too or the MP4 muxer stops the recording.
    @Test(arguments: [("mp4", VideoCodecType.h264), ("mkv", .vp8)])
    func framesCloserThanTheContainersTickAreAllWritten(ext: String, codec: VideoCodecType) throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("close.\(ext)")
        let (video, _) = try Self.media(codec, seconds: 1)
        let writer = try ContainerWriter(path: path, container: RecordingContainer(path: path)!,
                                         video: .init(codec: codec, width: 320, height: 180,
                                                      extradata: codec == .h264 ? SampleFormat.parameterSets(video[0].1.data) : []),
                                         audioChannels: nil)
        // Frames 10 and 20 land 1 µs after the frame before them.
        var last: Int64 = -1
        for (i, (t, frame)) in video.enumerated() {
            let time = (i == 10 || i == 20) ? last + 1 : Int64(t * 1_000_000)
            try writer.write(RecordingTimeline.Sample(track: .video, data: frame.data, isKeyframe: frame.isKeyframe, time: time, duration: 0))
            last = time
        }
        try writer.finish()
        #expect(try FileProbe(path).video?.packets == 30)
        let reader = try LibAVVideoReader(path: path)
        var read: [UInt32] = []
        while let frame = try reader.readFrame() { if let n = TestPattern.read(frame)?.frameNumber { read.append(n) } }
        #expect(read == Array(0..<30))
    }

    @Test func aKilledRecordingPlaysToItsLastFragment() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("killed.mp4")
        // The writer is never finished: what is on disk is what a kill -9 leaves.
        let writer = try Self.write(path, .h264, seconds: 4, finish: false)
        let copy = dir.path("copy.mp4")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        withExtendedLifetime(writer) {}
        let probe = try FileProbe(copy)
        let video = try #require(probe.video)
        #expect((video.last ?? 0) >= 3.3, "only \(video.last ?? 0) s of 4 s readable")
        let reader = try LibAVVideoReader(path: copy)
        var frames = 0
        while try reader.readFrame() != nil { frames += 1 }
        #expect(frames >= 100)
    }

    @Test func aCodecTheContainerCannotHoldIsAClearError() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        #expect(throws: MediaError("\(dir.path("x.mp4")): VP8 cannot be recorded to .mp4; use .webm or .mkv")) {
            _ = try ContainerWriter(path: dir.path("x.mp4"), container: .mp4,
                                    video: .init(codec: .vp8, width: 320, height: 180, extradata: []), audioChannels: 1)
        }
        #expect(throws: MediaError("out.avi: record to a .mp4, .webm or .mkv file")) { _ = try Recorder(path: "out.avi") }
        // A directory that does not exist: the error names the file.
        let r = try Recorder(path: "/nonexistent/dir/x.webm")
        let (video, _) = try Self.media(.vp8, seconds: 0.5)
        var packetizer = VP8Packetizer()
        var seq: UInt16 = 0
        for (_, frame) in video {
            for p in packetizer.packetize(frame, maxPayloadSize: 1200) {
                r.video(RTPPacket(marker: p.marker, payloadType: 96, sequenceNumber: seq, timestamp: frame.rtpTimestamp, ssrc: 5, payload: p.bytes), codec: .vp8)
                seq &+= 1
            }
        }
        let stats = r.close()
        #expect(stats.error?.hasPrefix("/nonexistent/dir/x.webm: cannot open for writing") == true)
        #expect(!stats.started)
    }

    /// The recorder fed RTP as a receiver gets it: packetized, with loss the sender repairs
    /// by retransmission (arriving late) and sender reports; the file has every frame.
    @Test func rtpInWithRetransmissionsGivesEveryFrame() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("rtp.mp4")
        let recorder = try Recorder(path: path)
        let (video, audio) = try Self.media(.h264, seconds: 3)
        let start = ContinuousClock.now
        var packetizer = H264Packetizer()
        var events: [(Double, () -> Void)] = []
        var seq: UInt16 = 65_500   // wraps
        let ntpEpoch = 3_900_000_000.0
        for (t, frame) in video {
            for (k, p) in packetizer.packetize(frame, maxPayloadSize: 1000).enumerated() {
                let packet = RTPPacket(marker: p.marker, payloadType: 102, sequenceNumber: seq, timestamp: 90_000 &+ frame.rtpTimestamp, ssrc: 7, payload: p.bytes)
                seq &+= 1
                // Every 7th packet is lost and comes back 80 ms later.
                let delay = (Int(seq) % 7 == 0 && k > 0) ? 0.09 : 0.01
                events.append((t + delay, { recorder.video(packet, codec: .h264, arrival: start + .seconds(t + delay)) }))
            }
        }
        for (k, (t, p)) in audio.enumerated() {
            let packet = RTPPacket(payloadType: 111, sequenceNumber: UInt16(k), timestamp: 4800 &+ UInt32(k * 960), ssrc: 8, payload: p)
            events.append((t + 0.03, { recorder.audio(packet, arrival: start + .seconds(t + 0.03)) }))
        }
        for t in stride(from: 0.0, to: 3, by: 1) {
            let v = SenderReport(ssrc: 7, ntpTimestamp: UInt64((ntpEpoch + t) * 4_294_967_296), rtpTimestamp: 90_000 &+ UInt32(t * 90_000),
                                 packetCount: 0, octetCount: 0, reports: [])
            let a = SenderReport(ssrc: 8, ntpTimestamp: UInt64((ntpEpoch + t) * 4_294_967_296), rtpTimestamp: 4800 &+ UInt32(t * 48_000),
                                 packetCount: 0, octetCount: 0, reports: [])
            events.append((t, { recorder.senderReport(v, video: true); recorder.senderReport(a, video: false) }))
        }
        for (_, deliver) in events.sorted(by: { $0.0 < $1.0 }) { deliver() }
        let stats = recorder.close()
        #expect(stats.error == nil)
        #expect(stats.videoFrames == 90)
        #expect(stats.audioPackets == 150)
        let probe = try FileProbe(path)
        #expect(probe.video?.packets == 90)
        #expect(probe.audio?.packets == 150)
        #expect(abs((probe.video?.first ?? 1) - (probe.audio?.first ?? 0)) <= 0.001)
        let reader = try LibAVVideoReader(path: path)
        var read: [UInt32] = []
        while let frame = try reader.readFrame() { if let n = TestPattern.read(frame)?.frameNumber { read.append(n) } }
        #expect(read == Array(0..<90))
    }
}
