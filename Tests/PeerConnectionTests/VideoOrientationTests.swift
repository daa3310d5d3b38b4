import Capture
import Foundation
import HTTP
import Media
import PeerConnection
import RTP
import Relay
import SessionSupport
import Synchronization
import Testing

/// Decoded frames: size, rotation, and the mean luma of the four corner blocks (upright view
/// top-left, top-right, bottom-left, bottom-right) of the picture as decoded. Called as loop
/// work on a `Simulation`: run the loop, then read `all`.
final class OrientationLog: VideoRenderer, Sendable {
    struct Entry: Sendable {
        var width: Int, height: Int, rotation: VideoRotation
        var corners: [Double]
    }
    private let frames = Mutex<[Entry]>([])

    func render(_ frame: VideoFrame) {
        let b = frame.buffer.converted(to: .i420)
        func mean(_ x0: Int, _ y0: Int) -> Double {
            var sum = 0
            for y in y0..<(y0 + 40) { for x in x0..<(x0 + 40) { sum += Int(b.luma(x: x, y: y)) } }
            return Double(sum) / 1600
        }
        let w = b.width, h = b.height
        let corners = w >= 100 && h >= 100 ? [mean(20, 20), mean(w - 60, 20), mean(20, h - 60), mean(w - 60, h - 60)] : []
        frames.withLock { $0.append(Entry(width: frame.width, height: frame.height, rotation: frame.rotation, corners: corners)) }
    }

    var all: [Entry] { frames.withLock { $0 } }
}

/// A 640x360 sensor-orientation picture, dark grey with a bright 80x80 block in its bottom-left
/// corner: with rotation .r90 (turn clockwise to show it) that block is top-left when upright.
func sensorFrame(timestampNs: Int64, rotation: VideoRotation) -> VideoFrame {
    let buffer = VideoFrameBuffer.filledI420(width: 640, height: 360, y: 40, u: 128, v: 128)
    let luma = buffer.planePointer(0)
    for y in 280..<360 {
        for x in 0..<80 { luma[y * buffer.strides[0] + x] = 230 }
    }
    return VideoFrame(buffer: buffer, rotation: rotation, timestampNs: timestampNs)
}

/// Feeds frames into a `Simulation` peer's source one frame period of virtual time apart: each
/// is encoded inline as it arrives, its packets move while the clock does.
func deliverFrames(_ frames: [VideoFrame], into source: VideoSource, on sim: Simulation) {
    for frame in frames {
        source.deliverCapturedFrame(frame)
        sim.advance(by: framePeriod)
    }
}

/// Test-pattern frames (640x360) carrying `rotation`.
func patternFrames(_ capturer: TestPatternCapturer, count: Int, from first: Int, rotation: VideoRotation) -> [VideoFrame] {
    (first..<(first + count)).map { i in
        var f = capturer.captureFrame(at: Int64(i) * 33_333_333, width: 640, height: 360)
        f.rotation = rotation
        return f
    }
}

func withoutVideoOrientation(_ sdp: String) -> String {
    sdp.components(separatedBy: "\r\n").filter { !$0.contains(RTPExtensionURI.videoOrientation) }.joined(separator: "\r\n")
}

@Suite("Video orientation (urn:3gpp:video-orientation)")
struct VideoOrientationTests {
    // MARK: SDP

    @Test("offers carry the orientation extmap in video m-lines only, next to mid")
    func offerListsExtension() async throws {
        let sim = Simulation()
        let a = try sim.peer()
        _ = try await a.addTransceiver(.audio, TransceiverInit(direction: .sendrecv))
        _ = try await a.addTransceiver(.video, TransceiverInit(direction: .sendrecv))
        let offer = try await a.createOffer().sdp
        let sections = offer.components(separatedBy: "\r\nm=").dropFirst()
        let audio = try #require(sections.first { $0.hasPrefix("audio") })
        let video = try #require(sections.first { $0.hasPrefix("video") })
        #expect(video.contains("\r\na=extmap:13 urn:3gpp:video-orientation\r\n"))
        #expect(video.contains("\r\na=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r\n"))
        #expect(!audio.contains("video-orientation"))
        #expect(audio.contains("\r\na=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r\n"))
        await a.close()
    }

    @Test("answers take the offer's id; without it in the offer it is not answered or used")
    func answerUsesOfferedID() async throws {
        for offeredID in [7, nil] as [Int?] {
            let sim = Simulation()
            let a = try sim.peer(), b = try sim.peer()
            _ = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly))
            let ours = try await a.createOffer()
            try await a.setLocalDescription(ours)
            #expect(sim.run { a.iceGatheringState == .complete })
            var offer = try #require(a.localDescription).sdp
            offer = offeredID.map { offer.replacingOccurrences(of: "a=extmap:13 urn:3gpp", with: "a=extmap:\($0) urn:3gpp") }
                ?? withoutVideoOrientation(offer)
            try await b.setRemoteDescription(SessionDescription(type: .offer, sdp: offer))
            let answer = try await b.createAnswer()
            try await b.setLocalDescription(answer)
            try await a.setRemoteDescription(answer)
            let expected = offeredID.map { [RtpHeaderExtensionParameters(uri: RTPExtensionURI.videoOrientation, id: UInt8($0))] } ?? []
            if let id = offeredID {
                #expect(answer.sdp.contains("\r\na=extmap:\(id) urn:3gpp:video-orientation\r\n"), "\(answer.sdp)")
            } else {
                #expect(!answer.sdp.contains("video-orientation"))
            }
            #expect(answer.sdp.contains("a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid"))
            for pc in [a, b] {
                let t = try #require(pc.transceivers.first)
                #expect(t.negotiatedHeaderExtensions.filter { $0.uri == RTPExtensionURI.videoOrientation } == expected)
                #expect(t.negotiatedHeaderExtensions.contains { $0.uri == RTPExtensionURI.sdesMID && $0.id == 1 })
            }
            await a.close()
            await b.close()
        }
    }

    // MARK: end to end

    @Test("negotiated: frames go as captured, the receiver gets their rotation (last packet only)",
          arguments: ["H264", "VP8"])
    func negotiatedCarriesRotation(codec: String) async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let source = VideoSource()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [codec == "H264" ? .h264 : .vp8])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try encodeEveryFrame(t.sender)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let receiver = try #require(b.transceivers.first)
        let cvoID = try #require(receiver.negotiatedHeaderExtensions.first { $0.uri == RTPExtensionURI.videoOrientation }?.id)
        let packets = PacketLog()
        receiver.receiver.onRTP = { packets.append($0) }
        let log = OrientationLog()
        try #require(receiver.receiver.videoTrack).addRenderer(log)

        let capturer = TestPatternCapturer()
        deliverFrames(patternFrames(capturer, count: 10, from: 0, rotation: .r90), into: source, on: sim)
        #expect(sim.run(within: .seconds(2)) { log.all.count >= 10 })
        deliverFrames(patternFrames(capturer, count: 10, from: 10, rotation: .r180), into: source, on: sim)
        #expect(sim.run(within: .seconds(2)) { log.all.count >= 20 })

        let frames = log.all
        #expect(frames.count == 20, "decoded \(frames.count) of 20")
        #expect(frames.allSatisfy { $0.width == 640 && $0.height == 360 }, "sent as captured, not turned")
        #expect(frames.map(\.rotation) == Array(repeating: .r90, count: 10) + Array(repeating: .r180, count: 10))
        // The element rides on each frame's last (marker) packet and nowhere else.
        let rtp = packets.all
        #expect(rtp.contains { !$0.marker }, "frames should span several packets")
        #expect(rtp.filter(\.marker).allSatisfy { $0.extensionData(id: cvoID) != nil })
        #expect(rtp.filter { !$0.marker }.allSatisfy { $0.extensionData(id: cvoID) == nil })
        let stats = try #require(await b.getStats().ofType("inbound-rtp").first)
        #expect(stats.int("frameWidth") == 640 && stats.int("frameHeight") == 360, "pre-rotation, as Chromium reports")
        await a.close()
        await b.close()
    }

    @Test("not negotiated: the sender turns the pixels, the receiver gets an upright 360x640 picture")
    func notNegotiatedRotatesPixels() async throws {
        let sim = Simulation()
        let a = try sim.peer(Simulation.fullSizeStart), b = try sim.peer()
        let source = VideoSource()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try await sim.negotiate(a, b, editAnswer: withoutVideoOrientation)
        #expect(t.negotiatedHeaderExtensions.allSatisfy { $0.uri != RTPExtensionURI.videoOrientation })
        try sim.connect(a, b)
        let log = OrientationLog()
        try #require(b.transceivers.first?.receiver.videoTrack).addRenderer(log)

        let frames = (0..<8).map { sensorFrame(timestampNs: Int64($0) * 33_333_333, rotation: .r90) }
        deliverFrames(frames, into: source, on: sim)
        #expect(sim.run(within: .seconds(2)) { log.all.count >= 8 })
        let got = log.all
        #expect(got.count == 8, "decoded \(got.count) of 8")
        #expect(got.allSatisfy { $0.width == 360 && $0.height == 640 && $0.rotation == .r0 })
        let last = try #require(got.last)
        // Upright: the bright block is top-left; the other corners stay dark.
        #expect(last.corners.count == 4)
        #expect(last.corners[0] > 180, "top-left \(last.corners)")
        #expect(last.corners.dropFirst().allSatisfy { $0 < 80 }, "other corners \(last.corners)")
        let out = try #require(await a.getStats().ofType("outbound-rtp").first)
        #expect(out.int("frameWidth") == 360 && out.int("frameHeight") == 640)
        await a.close()
        await b.close()
    }

    @Test("relay: a publisher's rotation reaches a player through the embedded RelayServer (dropped for a player without it)",
          arguments: [true, false])
    func relayForwardsRotation(playerNegotiates: Bool) async throws {
        let sim = Simulation()
        let (relay, publisher, source, t) = try await sim.relayWithPublisher(stream: "cvo")
        #expect(t.negotiatedHeaderExtensions.contains { $0.uri == RTPExtensionURI.videoOrientation }, "the relay accepts it")

        let player = try sim.peer()
        _ = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly))
        try await sim.exchange(player, with: relay, endpoint: "whep", stream: "cvo", edit: playerNegotiates ? { $0 } : withoutVideoOrientation)
        let log = OrientationLog()
        try #require(player.transceivers.first?.receiver.videoTrack).addRenderer(log)

        // The relay asks for a keyframe when the player connects; send until the player decodes
        // (20 s of frames at most).
        let capturer = TestPatternCapturer()
        var sent = 0
        while log.all.count < 5 && sent < 600 {
            deliverFrames(patternFrames(capturer, count: 1, from: sent, rotation: .r90), into: source, on: sim)
            sent += 1
        }
        let frames = log.all
        #expect(frames.count >= 5, "the player decoded \(frames.count) frames of \(sent)")
        // A player that did not negotiate the extension sees the frames unrotated (no transcoding).
        let expected: VideoRotation = playerNegotiates ? .r90 : .r0
        #expect(!frames.isEmpty && frames.allSatisfy { $0.rotation == expected && $0.width == 640 && $0.height == 360 })
        await player.close()
        await publisher.close()
        await relay.stop()
    }
}
