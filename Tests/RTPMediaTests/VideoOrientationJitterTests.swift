import Media
import RTP
import Testing
@testable import RTPMedia

/// The jitter buffer reads urn:3gpp:video-orientation from the packet that carries it and gives
/// every frame the rotation last received.
@Suite struct VideoOrientationJitterTests {
    let start = ContinuousClock.now
    let cvoID: UInt8 = 13

    /// Packets of one frame with the orientation element (if any) on the last one, as senders do.
    func frame(_ sender: inout SimulatedVideoSender, keyframe: Bool, rotation: VideoRotation?) -> [RTPPacket] {
        var packets = sender.nextFrame(keyframe: keyframe, size: keyframe ? 4000 : 1500, at: start)
        if let rotation, !packets.isEmpty {
            packets[packets.count - 1].setExtension(id: cvoID, data: rotation.videoOrientationExtensionData)
        }
        return packets
    }

    @Test(arguments: [VideoCodecType.h264, .vp8])
    func rotationComesFromTheLastPacketAndPersists(codec: VideoCodecType) {
        var sender = SimulatedVideoSender(codec: codec)
        var jb = VideoJitterBuffer(codec: codec)
        jb.videoOrientationExtensionID = cvoID
        // nil = no element on that frame.
        let plan: [(key: Bool, rotation: VideoRotation?)] = [
            (true, .r90), (false, nil), (false, nil), (false, .r180), (false, nil), (false, .r0), (false, nil),
            (true, .r270), (false, nil),
        ]
        var rotations: [VideoRotation] = []
        for (i, step) in plan.enumerated() {
            for p in frame(&sender, keyframe: step.key, rotation: step.rotation) {
                jb.insert(p, arrival: start + .milliseconds(i * 33))
            }
            while let f = jb.pollFrame() { rotations.append(f.rotation) }
        }
        #expect(rotations == [.r90, .r90, .r90, .r180, .r180, .r0, .r0, .r270, .r270])
        #expect(jb.currentRotation == .r270)
    }

    @Test func reorderedPacketsStillGiveTheFrameItsRotation() {
        var sender = SimulatedVideoSender(codec: .h264)
        var jb = VideoJitterBuffer(codec: .h264)
        jb.videoOrientationExtensionID = cvoID
        let key = frame(&sender, keyframe: true, rotation: .r90)
        #expect(key.count > 2)
        // The marker packet (with the element) arrives first.
        for (i, p) in key.reversed().enumerated() { jb.insert(p, arrival: start + .milliseconds(i)) }
        #expect(jb.pollFrame()?.rotation == .r90)
    }

    @Test func elementIsIgnoredUnlessNegotiated() {
        var sender = SimulatedVideoSender(codec: .vp8)
        var jb = VideoJitterBuffer(codec: .vp8)
        for p in frame(&sender, keyframe: true, rotation: .r90) { jb.insert(p, arrival: start) }
        #expect(jb.pollFrame()?.rotation == .r0)
        // Another id than the negotiated one is not the orientation either.
        jb.videoOrientationExtensionID = 5
        for p in frame(&sender, keyframe: false, rotation: .r180) { jb.insert(p, arrival: start) }
        #expect(jb.pollFrame()?.rotation == .r0)
    }

    @Test func extensionDataMapsQuarterTurns() {
        for r in VideoRotation.allCases {
            #expect(VideoRotation(videoOrientationExtensionData: r.videoOrientationExtensionData) == r)
        }
        #expect(VideoRotation.r90.videoOrientationExtensionData == [0x01])
        #expect(VideoRotation.r270.videoOrientationExtensionData == [0x03])
        // Camera and flip bits do not change the rotation.
        #expect(VideoRotation(videoOrientationExtensionData: [0x0E]) == .r180)
        #expect(VideoRotation(videoOrientationExtensionData: []) == nil)
    }
}
