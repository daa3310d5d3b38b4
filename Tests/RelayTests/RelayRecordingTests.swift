import Capture
import Foundation
import Media
import PeerConnection
import SessionSupport
import TestSupport
import Testing
import Transport
@testable import Relay

/// The relay's DVR (`serve --record`): a publisher's stream through a relay on simulated time is
/// written to DIR/APP/STREAM/<start>.<ext>, which libavformat (ffprobe) reads back; files are cut
/// per segment and per publisher session; a directory that cannot be written is logged once,
/// the players keep getting the stream, and recording resumes when it can.
@Suite(.serialized) struct RelayRecordingTests {
    /// A relay on `sim` that records to `options` and keeps its log.
    func relay(_ sim: Simulation, _ options: RecordingOptions, takeover: Bool = false, log: Monitor<[String]>) throws -> RelayServer {
        let address = sim.nextAddress(port: 8000)
        let mux = try sim.loop.perform { try sim.network.mux(at: address) }
        return try RelayServer(loop: sim.loop, media: mux, httpPort: nil, takeover: takeover, recording: options,
                               log: { line in log.withLock { $0.append(line) } })
    }

    /// A publisher of H.264 or VP8 video and Opus audio on stream `live/NAME`, with its feeds.
    final class Publisher {
        let pc: PeerConnection
        let video = VideoSource()
        let audio = AudioSource()
        let pattern: TestPatternCapturer
        let tone = ToneCapturer(frequency: 440, level: 0.25)
        var audioNs: Int64 = 0, videoNs: Int64 = 0, frames = 0, nowNs: Int64 = 0

        init(_ sim: Simulation, _ relay: RelayServer, stream: String, codec: RtpCodecCapability) async throws {
            pc = try sim.peer()
            pattern = TestPatternCapturer(delegate: video)
            try await pc.addTrack(AudioTrack(id: "a", source: audio))
            let sender = try await pc.addTrack(VideoTrack(id: "v", source: video), codecs: [codec])
            // Every frame encoded (no frame dropping at the start bitrate).
            try sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(minBitrate: 400_000)],
                                                       degradationPreference: .maintainFramerate))
            try await sim.exchange(relay, pc, endpoint: "whip", stream: stream)
        }

        /// Audio every 10 ms, video at 30 fps, in capture order as virtual time goes.
        func run(_ sim: Simulation, for duration: Duration) {
            let end = nowNs + duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
            while nowNs < end {
                if audioNs <= videoNs {
                    audio.deliver(tone.nextFrame(timestampNs: audioNs))
                    audioNs += 10_000_000
                } else {
                    pattern.captureFrame(at: videoNs, width: 320, height: 180)
                    frames += 1
                    videoNs = Int64(frames) * 33_333_333
                }
                let next = min(audioNs, videoNs)
                sim.advance(by: .nanoseconds(next - nowNs))
                nowNs = next
            }
        }

    }

    func temporaryDirectory() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dvr-\(UInt64.random(in: 0...UInt64.max))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    func files(in folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().map { "\(folder)/\($0)" }
    }

    /// Ends the relay: every recording gets its trailer.
    func stop(_ relay: RelayServer) async {
        await relay.stop()
        await relay.dvr?.idle()
    }

    @Test(arguments: [("h264", "mp4"), ("vp8", "webm")])
    func recordsWhatThePublisherSends(codec: String, ext: String) async throws {
        let sim = Simulation()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = Monitor<[String]>([])
        let relay = try relay(sim, RecordingOptions(directory: dir), log: log)
        let publisher = try await Publisher(sim, relay, stream: "cam", codec: codec == "h264" ? .h264 : .vp8)
        publisher.run(sim, for: .seconds(6))
        let streams = await relay.streams()
        let recording = try #require(streams.first?["recording"] as? [String: Any])
        #expect(recording["active"] as? Bool == true)
        let current = try #require(recording["file"] as? String)
        #expect(current.hasPrefix("\(dir)/live/cam/") && current.hasSuffix(".\(ext)"), "\(current)")
        sim.advance(by: .milliseconds(300))
        let sent = publisher.frames   // every captured frame is encoded and sent (maintainFramerate, 400 kbit/s)
        await stop(relay)

        let written = files(in: "\(dir)/live/cam")
        #expect(written == [current])
        let probe = try FFprobe(current)
        #expect(probe.video?.codec == codec)
        #expect(probe.video?.width == 320 && probe.video?.height == 180)
        #expect(probe.audio?.codec == "opus")
        // The recording opens on the first keyframe; at most a frame or two before it is lost.
        let frames = probe.video?.frames ?? 0
        #expect(frames >= sent - 2 && frames <= sent, "\(frames) frames in the file, \(sent) sent")
        #expect(abs(probe.duration - 6) < 0.3, "duration \(probe.duration) s")
        #expect(try FFprobe.decodeErrors(current).isEmpty)
        #expect(log.value.contains { $0.contains("recorded live/cam to \(current)") }, "\(log.value)")
    }

    @Test func cutsSegmentsAtKeyframes() async throws {
        let sim = Simulation()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = Monitor<[String]>([])
        let relay = try relay(sim, RecordingOptions(directory: dir, segment: .seconds(2)), log: log)
        let publisher = try await Publisher(sim, relay, stream: "seg", codec: .h264)
        publisher.run(sim, for: .milliseconds(7100))
        sim.advance(by: .milliseconds(300))
        let sent = publisher.frames   // every captured frame is encoded and sent (maintainFramerate, 400 kbit/s)
        await stop(relay)

        let written = files(in: "\(dir)/live/seg")
        #expect(written.count == 4, "\(written)")
        var total = 0
        for (i, file) in written.enumerated() {
            let probe = try FFprobe(file)
            total += probe.video?.frames ?? 0
            #expect(probe.firstFrameIsKeyframe, "\(file) does not open on a keyframe")
            #expect(try FFprobe.decodeErrors(file).isEmpty, "\(file)")
            // Each cut is at the first keyframe after 2 s (asked for when due: one round trip).
            if i < written.count - 1 { #expect(probe.duration > 1.9 && probe.duration < 2.4, "\(file): \(probe.duration) s") }
        }
        // Frames on both sides of each cut are kept (each file ends where the next begins).
        #expect(total >= sent - 2 && total <= sent, "\(total) frames in \(written.count) files, \(sent) sent; \(log.value)")
    }

    @Test func takeoverStartsANewFile() async throws {
        let sim = Simulation()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = Monitor<[String]>([])
        let relay = try relay(sim, RecordingOptions(directory: dir), takeover: true, log: log)
        let first = try await Publisher(sim, relay, stream: "t", codec: .h264)
        first.run(sim, for: .seconds(3))
        let second = try await Publisher(sim, relay, stream: "t", codec: .vp8)
        second.run(sim, for: .seconds(3))
        sim.advance(by: .milliseconds(300))
        await first.pc.close()
        await second.pc.close()
        await stop(relay)

        let written = files(in: "\(dir)/live/t")
        #expect(written.count == 2, "\(written)")
        #expect(written.first?.hasSuffix(".mp4") == true && written.last?.hasSuffix(".webm") == true, "\(written)")
        for file in written {
            let probe = try FFprobe(file)
            #expect(abs(probe.duration - 3) < 0.4, "\(file): \(probe.duration) s")
            #expect(try FFprobe.decodeErrors(file).isEmpty)
        }
    }

    @Test func unwritableDirectoryIsLoggedOnceAndTheStreamFlows() async throws {
        let sim = Simulation()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A file where the directory should be: unwritable even for root.
        let blocked = "\(dir)/blocked"
        FileManager.default.createFile(atPath: blocked, contents: Data())
        let log = Monitor<[String]>([])
        let relay = try relay(sim, RecordingOptions(directory: blocked), log: log)
        let publisher = try await Publisher(sim, relay, stream: "x", codec: .h264)
        let player = try sim.peer()
        _ = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly))
        try await sim.exchange(relay, player, endpoint: "whep", stream: "x")
        publisher.run(sim, for: .seconds(12))   // two retries fail meanwhile
        let failures = log.value.filter { $0.contains("recording live/x failed") }
        #expect(failures.count == 1, "\(log.value)")
        let received = player.transceivers.first { $0.kind == .video }?.receiver.stats.packets ?? 0
        #expect(received > 300, "the player got \(received) packets")
        let row = try #require(await relay.streams().first?["recording"] as? [String: Any])
        #expect(row["active"] as? Bool == false && row["error"] != nil, "\(row)")

        // The directory can be made again: the next try (within 5 s) records.
        try FileManager.default.removeItem(atPath: blocked)
        publisher.run(sim, for: .seconds(8))
        #expect(log.value.contains { $0.contains("recording live/x resumed") }, "\(log.value)")
        #expect(log.value.filter { $0.contains("recording live/x failed") }.count == 1)
        await player.close()
        await publisher.pc.close()
        await stop(relay)
        let written = files(in: "\(blocked)/live/x")
        #expect(written.count == 1, "\(written)")
        if let file = written.first { #expect(try FFprobe(file).duration > 2) }
    }
}

/// What ffprobe (libavformat) reads from a file.
struct FFprobe {
    struct Stream {
        var codec: String
        var frames: Int
        var width: Int
        var height: Int
    }
    var video: Stream?
    var audio: Stream?
    var duration: Double
    var firstFrameIsKeyframe: Bool

    init(_ path: String) throws {
        let json = try Self.run(["-v", "error", "-count_frames", "-show_entries",
                                 "stream=codec_type,codec_name,nb_read_frames,width,height:format=duration", "-of", "json", path])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        for s in object["streams"] as? [[String: Any]] ?? [] {
            let stream = Stream(codec: s["codec_name"] as? String ?? "", frames: Int(s["nb_read_frames"] as? String ?? "") ?? 0,
                                width: s["width"] as? Int ?? 0, height: s["height"] as? Int ?? 0)
            if s["codec_type"] as? String == "video" { video = stream } else if s["codec_type"] as? String == "audio" { audio = stream }
        }
        duration = Double((object["format"] as? [String: Any])?["duration"] as? String ?? "") ?? 0
        let first = try Self.run(["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags", "-read_intervals", "%+#1",
                                  "-of", "csv=p=0", path])
        firstFrameIsKeyframe = first.hasPrefix("K")
    }

    /// What `ffmpeg -v error -i FILE -f null -` prints: nothing for a file that decodes cleanly.
    static func decodeErrors(_ path: String) throws -> String {
        try run(["-v", "error", "-i", path, "-f", "null", "-"], tool: "/usr/bin/ffmpeg", stderr: true)
    }

    static func run(_ arguments: [String], tool: String = "/usr/bin/ffprobe", stderr: Bool = false) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        if stderr { process.standardError = out; process.standardOutput = FileHandle.nullDevice } else { process.standardOutput = out }
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
