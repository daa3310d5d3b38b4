import Foundation
import SwiftRTC

/// `swiftrtc photo`: a still from a camera with the given settings, as PNG or JPEG.
enum PhotoCommand {
    static let usage = """
    usage: swiftrtc photo --out PATH [--source camera[:ID]] [--size WxH] [--json PATH] [camera flags]

    Opens the camera, applies the settings, takes a still and writes it upright (PNG for .png,
    JPEG for .jpg/.jpeg). Prints what the camera actually set.
      --out PATH          where the photo goes
      --size WxH          the photo's size (the camera's nearest format); default: the camera's
                          full resolution
      --quality Q         JPEG quality 1…100 (default 90)
      --json PATH         a summary: device, size, settings as set, mean luma and R, G, B (and with
                          --faces the faces in view: id, box in the upright photo, roll, yaw)
    \(CameraOptions.usage)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc photo", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let sourceSpec = try a.option("source") ?? "camera"
        guard CameraOptions.isCamera(sourceSpec) else {
            throw UsageError("swiftrtc photo: --source must be camera or camera:ID, not \"\(sourceSpec)\"")
        }
        let camera = try CameraOptions.parse(&a, source: sourceSpec)
        guard let out = try a.option("out") else { throw UsageError("swiftrtc photo: --out PATH is required") }
        let size = try a.option("size", default: (width: Int, height: Int)?.none, parseSize)
        let quality = try a.number("quality", default: 90, in: 1...100)
        let jsonPath = try a.option("json")
        try a.finish()
        guard PhotoFile.isSupported(out) else {
            throw UsageError("swiftrtc photo: --out must end in .png, .jpg or .jpeg, not \"\(out)\"")
        }

        let counter = FrameCounter()
        let capturer = camera.makeCapturer(delegate: counter, command: "swiftrtc photo")
        try await camera.start(capturer, width: size?.width ?? 1280, height: size?.height ?? 720, fps: 30, command: "swiftrtc photo")
        // A couple of frames first, so the settings are in the picture (a real sensor needs them).
        guard await counter.wait(for: 3, timeout: 5) else {
            await capturer.stopCapture()
            printError("swiftrtc photo: the camera delivered no frames within 5 s")
            return 1
        }
        // With --faces, a third of a second more: an image detector answers a few frames late.
        if camera.faces { _ = await counter.wait(for: 10, timeout: 3) }
        let photo = try await capturer.takePhoto(fullResolution: size == nil)
        let faces = capturer.facesInView
        let controls = await capturer.controls
        let device = await capturer.currentDevice
        await capturer.stopCapture()
        let byteCount = try PhotoFile.write(photo, to: out, quality: quality)
        let m = meanColour(photo)
        let upright = photo.rotation.swapsDimensions ? (photo.height, photo.width) : (photo.width, photo.height)
        say("photo: wrote \(out) (\(upright.0)x\(upright.1), \(byteCount / 1000) kB) mean luma \(fmtNumber(m.luma.rounded())), R/B \(String(format: "%.3f", m.r / max(m.b, 1)))")
        if camera.faces { say("photo: \(faces.count) face\(faces.count == 1 ? "" : "s") in view\(faces.isEmpty ? "" : ": ")\(faces.map(\.description).joined(separator: "; "))") }
        if let jsonPath {
            var summary: [String: Any] = [
                "path": out, "device": device?.id ?? "", "width": upright.0, "height": upright.1,
                "meanLuma": m.luma, "meanR": m.r, "meanG": m.g, "meanB": m.b,
                "settings": controls.settings.map(\.description), "rotation": photo.rotation.rawValue,
            ]
            if camera.faces {
                summary["faces"] = faces.map { f -> [String: Any] in
                    ["id": f.id, "x": f.bounds.x, "y": f.bounds.y, "width": f.bounds.width, "height": f.bounds.height,
                     "roll": f.rollAngle ?? NSNull(), "yaw": f.yawAngle ?? NSNull()]
                }
            }
            try writeJSON(summary, to: jsonPath)
        }
        return 0
    }

    /// Mean R, G, B and BT.601 luma of the upright picture.
    static func meanColour(_ frame: VideoFrame) -> (luma: Double, r: Double, g: Double, b: Double) {
        let rgb = PNGEncoder.uprightRGB(frame).rgb
        var r = 0, g = 0, b = 0
        var i = 0
        while i + 2 < rgb.count {
            r += Int(rgb[i]); g += Int(rgb[i + 1]); b += Int(rgb[i + 2])
            i += 3
        }
        let n = Double(max(rgb.count / 3, 1))
        let mr = Double(r) / n, mg = Double(g) / n, mb = Double(b) / n
        return (0.299 * mr + 0.587 * mg + 0.114 * mb, mr, mg, mb)
    }
}

/// Counts frames so a command can wait for the camera to be running.
final class FrameCounter: VideoCapturerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var frames = 0
    let next: (any VideoCapturerDelegate)?
    init(next: (any VideoCapturerDelegate)? = nil) { self.next = next }

    func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame) {
        lock.lock(); frames += 1; lock.unlock()
        next?.capturer(capturer, didCapture: frame)
    }

    var count: Int { lock.lock(); defer { lock.unlock() }; return frames }

    /// Whether `n` more frames arrived within `timeout` seconds.
    func wait(for n: Int, timeout: Double) async -> Bool {
        let target = count + n
        let deadline = Date().addingTimeInterval(timeout)
        while count < target {
            if Date() >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}
