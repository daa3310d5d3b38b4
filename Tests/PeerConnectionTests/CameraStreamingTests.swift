import Camera
import Media
import PeerConnection
import Synchronization
import Testing

/// Decoded frames with the synthetic camera each came from.
private final class CameraLog: VideoRenderer, Sendable {
    private let frames = Mutex<[(width: Int, height: Int, camera: CameraPosition?)]>([])
    func render(_ frame: VideoFrame) {
        let camera = SyntheticScene.identify(frame)
        frames.withLock { $0.append((frame.width, frame.height, camera)) }
    }
    var all: [(width: Int, height: Int, camera: CameraPosition?)] { frames.withLock { $0 } }

    /// Waits (bounded) until `count` frames matching `match` arrived after the first `from`.
    func wait(from: Int, count: Int, _ match: @escaping ((width: Int, height: Int, camera: CameraPosition?)) -> Bool) async -> Bool {
        let end = ContinuousClock.now.advanced(by: .seconds(15))
        while ContinuousClock.now < end {
            if all.dropFirst(from).filter(match).count >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

@Suite("A camera over a PeerConnection")
struct CameraStreamingTests {
    @Test("switching cameras and sizes while streaming: same track, no renegotiation, the encoder follows")
    func switchWhileStreaming() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        let source = VideoSource()
        let track = VideoTrack(id: "camera", source: source)
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        t.sender.replaceTrack(track)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        let remote = try #require(b.transceivers.first?.receiver.videoTrack)
        let log = CameraLog()
        remote.addRenderer(log)
        let offerBefore = a.localDescription?.sdp

        let capturer = CameraCapturer(backend: SyntheticCameraBackend(), delegate: source)
        try await capturer.startCapture(device: SyntheticDevices.front, width: 640, height: 480, fps: 30)
        #expect(await log.wait(from: 0, count: 10) { $0.width == 640 && $0.height == 480 && $0.camera == .front })

        var mark = log.all.count
        try await capturer.switchCamera(position: .back)
        #expect(await log.wait(from: mark, count: 10) { $0.width == 640 && $0.camera == .back })

        // A photo mid-stream: the stream goes on.
        mark = log.all.count
        let photo = try await capturer.takePhoto()
        #expect(photo.width == 3840 && photo.height == 2160)
        #expect(await log.wait(from: mark, count: 10) { $0.camera == .back })

        // Another size on the same track: the encoder is rebuilt for it and the receiver follows.
        mark = log.all.count
        try await capturer.startCapture(device: SyntheticDevices.back, width: 1280, height: 720, fps: 30)
        #expect(await log.wait(from: mark, count: 10) { $0.width == 1280 && $0.height == 720 && $0.camera == .back })

        #expect(a.localDescription?.sdp == offerBefore, "no renegotiation")
        #expect(a.transceivers.count == 1 && b.transceivers.first?.receiver.videoTrack === remote)
        await capturer.stopCapture()
        await a.close()
        await b.close()
    }
}
