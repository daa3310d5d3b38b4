import Media

/// What format choice settled on, and how it differs from the request.
public struct FormatChoice: Sendable, Hashable {
    public var format: CaptureFormat
    public var fps: Double
    /// One line per way the request was not met (size, rate); empty when it was met exactly.
    public var warnings: [String]
}

/// Picks a device format for a requested size and rate, the way the reference app does and better.
public enum FormatChooser {
    /// Frame rates above this are not chosen unless asked for explicitly (the reference app's
    /// kFramerateLimit).
    public static let defaultMaxFrameRate = 30.0

    /// The reference app's session presets, largest first, tried in order when a size is missing.
    public static let presetChain: [(width: Int, height: Int)] = [(1920, 1080), (1280, 720), (640, 480), (352, 288)]

    /// The format nearest to `width`×`height` by |Δw|+|Δh| (a portrait request, taller than wide,
    /// is matched against the sensor's landscape sizes turned, as the reference app does); ties go
    /// to the higher frame rate, then the cheaper pixel format. The rate is the highest the format
    /// supports ≤ min(`fps`, `maxFrameRate`).
    public static func choose(from formats: [CaptureFormat], width: Int, height: Int, fps: Double,
                              maxFrameRate: Double = defaultMaxFrameRate) throws(CameraError) -> FormatChoice {
        try validate(width: width, height: height, fps: fps)
        guard !formats.isEmpty else { throw CameraError(.unsupported, "the device offers no formats we can use") }
        let (w, h) = height > width ? (height, width) : (width, height)
        let target = min(fps, maxFrameRate)
        func key(_ f: CaptureFormat) -> (Int, Double, Int) {
            (abs(f.width - w) + abs(f.height - h), -(f.bestFrameRate(atMost: target) ?? f.minFrameRate - 1000), f.pixelFormat.conversionCost)
        }
        var best = formats[0]
        for f in formats.dropFirst() where key(f) < key(best) { best = f }
        return finish(best, requestedWidth: w, requestedHeight: h, fps: fps, target: target)
    }

    /// Session-preset choice: the requested size if the device has it, else the presets of the
    /// chain no larger than the request in order (1920x1080 → 1280x720 → 640x480 → 352x288), else
    /// the device's smallest size. (The reference app jumped to 1920x1080 first whatever was asked;
    /// a 640x480 request must not turn into a 1080p stream.)
    public static func choosePreset(from formats: [CaptureFormat], width: Int, height: Int, fps: Double,
                                    maxFrameRate: Double = defaultMaxFrameRate) throws(CameraError) -> FormatChoice {
        try validate(width: width, height: height, fps: fps)
        guard !formats.isEmpty else { throw CameraError(.unsupported, "the device offers no formats we can use") }
        let (w, h) = height > width ? (height, width) : (width, height)
        var candidates = [(w, h)]
        candidates += presetChain.filter { $0.width * $0.height <= w * h && ($0.width, $0.height) != (w, h) }.map { ($0.width, $0.height) }
        for (cw, ch) in candidates {
            let same = formats.filter { $0.width == cw && $0.height == ch }
            if !same.isEmpty {
                let choice = try choose(from: same, width: cw, height: ch, fps: fps, maxFrameRate: maxFrameRate)
                return finish(choice.format, requestedWidth: w, requestedHeight: h, fps: fps, target: min(fps, maxFrameRate))
            }
        }
        let smallestArea = formats.map { $0.width * $0.height }.min() ?? 0
        let smallest = formats.filter { $0.width * $0.height == smallestArea }
        let choice = try choose(from: smallest, width: smallest[0].width, height: smallest[0].height, fps: fps, maxFrameRate: maxFrameRate)
        return finish(choice.format, requestedWidth: w, requestedHeight: h, fps: fps, target: min(fps, maxFrameRate))
    }

    /// Every size the devices offer, as "WxH", sorted by width then height, each once
    /// (the reference app's `availableVideoResolutions`).
    public static func availableResolutions(_ devices: [CaptureDevice]) -> [String] {
        var seen = Set<[Int]>()
        for d in devices { for f in d.formats { seen.insert([f.width, f.height]) } }
        return seen.sorted { $0[0] != $1[0] ? $0[0] < $1[0] : $0[1] < $1[1] }.map { "\($0[0])x\($0[1])" }
    }

    private static func validate(width: Int, height: Int, fps: Double) throws(CameraError) {
        guard VideoFrameBuffer.isValidSize(width: width, height: height) else {
            throw CameraError(.invalidArgument, "size \(width)x\(height) is not a picture size")
        }
        guard fps.isFinite, fps > 0 else { throw CameraError(.invalidArgument, "frame rate \(fps) must be above 0") }
    }

    private static func finish(_ f: CaptureFormat, requestedWidth w: Int, requestedHeight h: Int, fps: Double, target: Double) -> FormatChoice {
        var warnings: [String] = []
        if f.width != w || f.height != h {
            warnings.append("asked for \(w)x\(h), the device's nearest size is \(f.width)x\(f.height)")
        }
        let rate: Double
        if let r = f.bestFrameRate(atMost: target) {
            rate = r
        } else {
            rate = f.minFrameRate
        }
        if abs(rate - fps) > 1e-6 {
            let why = fps > target + 1e-6 && rate >= target - 1e-6 ? " (capped at \(fmt(target)))" : ""
            warnings.append("asked for \(fmt(fps)) fps, capturing at \(fmt(rate)) fps\(why)")
        }
        return FormatChoice(format: f, fps: rate, warnings: warnings)
    }
}
