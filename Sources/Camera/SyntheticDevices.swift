/// The two virtual cameras of the synthetic backend, described like a phone's: a front camera
/// with the usual selfie controls and a back camera with more resolution, more zoom, a wider ISO
/// range and a torch.
public enum SyntheticDevices {
    public static let frontID = "synthetic:front"
    public static let backID = "synthetic:back"

    public static let front = CaptureDevice(
        id: frontID, name: "Synthetic Front Camera", position: .front,
        formats: formats([(1920, 1080, 30), (1280, 720, 30), (640, 480, 30), (352, 288, 30)]),
        capabilities: capabilities(isoMax: 2176, isoMin: 34, zoomMax: 4, torch: false))

    public static let back = CaptureDevice(
        id: backID, name: "Synthetic Back Camera", position: .back,
        formats: formats([(3840, 2160, 30), (1920, 1080, 30), (1280, 720, 60), (640, 480, 30), (352, 288, 30)]),
        capabilities: capabilities(isoMax: 3072, isoMin: 32, zoomMax: 16, torch: true))

    public static let all = [front, back]

    /// Every size in NV12 (what phone sensors deliver) and BGRA, each at 1 fps up to `maxFps`.
    private static func formats(_ sizes: [(Int, Int, Double)]) -> [CaptureFormat] {
        sizes.flatMap { w, h, fps in
            [CameraPixelFormat.nv12, .bgra].map {
                CaptureFormat(width: w, height: h, pixelFormat: $0, frameRateRanges: [FrameRateRange(min: 1, max: fps)])
            }
        }
    }

    private static func capabilities(isoMax: Double, isoMin: Double, zoomMax: Double, torch: Bool) -> CameraCapabilities {
        var ranges: [CameraControl: ControlRange] = [
            .exposureBias: ControlRange(min: -8, max: 8, defaultValue: 0),
            .iso: ControlRange(min: isoMin, max: isoMax, defaultValue: 100),
            .exposureDuration: ControlRange(min: 1.0 / 8000, max: 1.0 / 3, defaultValue: 1.0 / 30),
            .whiteBalanceTemperature: ControlRange(min: 2500, max: 8000, defaultValue: 5500),
            .zoom: ControlRange(min: 1, max: zoomMax, defaultValue: 1),
            .focusPosition: ControlRange(min: 0, max: 1, defaultValue: 1),
        ]
        if torch { ranges[.torchLevel] = ControlRange(min: 0, max: 1, defaultValue: 1) }
        return CameraCapabilities(ranges: ranges, exposureModes: Set(ExposureMode.allCases),
                                  focusModes: Set(FocusMode.allCases), whiteBalanceModes: Set(WhiteBalanceMode.allCases),
                                  exposurePointOfInterest: true, focusPointOfInterest: true)
    }
}
