import Camera
import Media
import Testing

/// A backend whose listing fails, like V4L2 on a node the user may not open.
private final class DeniedBackend: CameraBackend {
    let name = "denied"
    func devices() throws(CameraError) -> [CaptureDevice] {
        throw CameraError(.permissionDenied, device: "/dev/video0", "cannot open /dev/video0: Permission denied")
    }
    func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
              sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        throw CameraError(.permissionDenied, device: device.id, "no")
    }
}

@Suite struct MultiCameraBackendTests {
    @Test func listsWhatItCanAndKeepsWhyTheRestFailed() throws {
        let fake = FakeBackend()
        let multi = MultiCameraBackend([DeniedBackend(), fake])
        #expect(try multi.devices().map(\.id) == ["fake:front", "fake:back"])
        #expect(multi.listingErrors == [CameraError(.permissionDenied, device: "/dev/video0", "cannot open /dev/video0: Permission denied")])
        #expect(multi.name == "denied+fake")
    }

    @Test func opensWithTheBackendThatListedTheDevice() async throws {
        let fake = FakeBackend()
        let capturer = CameraCapturer(backend: MultiCameraBackend([DeniedBackend(), fake]))
        try await capturer.startCapture(device: capturer.device(id: "fake:back"), width: 1280, height: 720, fps: 30)
        #expect(fake.opened == ["fake:back"])
        await capturer.stopCapture()
    }

    @Test func nothingListedThrowsTheFirstReason() {
        #expect(throws: CameraError(.permissionDenied, device: "/dev/video0", "cannot open /dev/video0: Permission denied")) {
            try MultiCameraBackend([DeniedBackend()]).devices()
        }
        #expect(throws: CameraError(.noSuchDevice, device: "x", "is not connected")) {
            try MultiCameraBackend([FakeBackend()]).open(FakeBackend.front.with(id: "x"), format: FakeBackend.front.formats[0], fps: 30,
                                                        controls: CameraControlState(), sink: NullSink())
        }
    }
}

private final class NullSink: CameraStreamSink {
    func cameraStream(didCapture frame: VideoFrame) {}
    func cameraStream(didFail error: CameraError) {}
}

private extension CaptureDevice {
    func with(id: String) -> CaptureDevice {
        var d = self
        d.id = id
        return d
    }
}
