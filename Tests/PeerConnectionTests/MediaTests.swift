import Capture
import Media
import PeerConnection
import Render
import SessionSupport
import Synchronization
import Testing

/// Frames a receiver decoded, with the test pattern read from each. On a `Simulation` the
/// renderer is called as loop work: run the loop, then read `all`.
final class FrameLog: VideoRenderer, Sendable {
    private let frames = Mutex<[(width: Int, height: Int, number: UInt32?)]>([])
    func render(_ frame: VideoFrame) {
        let n = TestPattern.read(frame)?.frameNumber
        frames.withLock { $0.append((frame.width, frame.height, n)) }
    }
    var all: [(width: Int, height: Int, number: UInt32?)] { frames.withLock { $0 } }
}

/// One frame period at 30 fps.
let framePeriod = Duration.nanoseconds(33_333_333)

@Suite("Media over a PeerConnection")
struct PeerConnectionMediaTests {
    @Test("the test pattern encoded, sent, decoded: right size, frame numbers in order", arguments: ["H264", "VP8"])
    func videoRoundTrip(codec: String) async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let source = VideoSource()
        let track = VideoTrack(id: "v", source: source)
        let capability: RtpCodecCapability = codec == "H264" ? .h264 : .vp8
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [capability])
        t.sender.replaceTrack(track)
        try encodeEveryFrame(t.sender)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let log = FrameLog()
        let remote = try #require(b.transceivers.first?.receiver.videoTrack)
        remote.addRenderer(log)
        let capturer = TestPatternCapturer(delegate: source)
        // Encoded inline as each frame is captured; packets move as virtual time does.
        for i in 0..<30 {
            capturer.captureFrame(at: Int64(i) * 33_333_333, width: 640, height: 360)
            sim.advance(by: framePeriod)
        }
        #expect(sim.run(within: .seconds(2)) { log.all.count >= 30 })
        let frames = log.all
        #expect(frames.count == 30, "decoded \(frames.count) of 30")
        #expect(frames.allSatisfy { $0.width == 640 && $0.height == 360 })
        let numbers = frames.compactMap(\.number)
        #expect(numbers.count == frames.count, "the pattern must survive encoding")
        #expect(numbers == numbers.sorted())
        #expect(numbers == Array(0..<30), "every frame, in capture order")
        let stats = await b.getStats()
        let inbound = try #require(stats.ofType("inbound-rtp").first)
        #expect(inbound.int("framesDecoded") == frames.count)
        #expect(inbound.int("frameWidth") == 640)
        let out = try #require(await a.getStats().ofType("outbound-rtp").first)
        #expect(out.int("framesEncoded") == 30)
        await a.close()
        await b.close()
    }
}
