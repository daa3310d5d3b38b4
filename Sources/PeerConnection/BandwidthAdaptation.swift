/// What an encoder gives up when the network's estimate cannot carry the source as captured
/// (`degradationPreference`): `maintainFramerate` lowers the resolution in steps,
/// `maintainResolution` the frame rate, `balanced` halves the resolution first, then the rate.
/// Sans-I/O: the encode queue asks once per frame with the current target.
///
/// A step down goes straight to the largest size the target can carry: every resolution
/// change costs a keyframe, and on a link that just shrank two keyframes a second apart are
/// what overflow its queue (seen: 720p → 540p → 360p at a 2.5 M → 500 k step clipped the
/// 200 ms FIFO on the second one). Steps up stay one at a time.
///
/// The measure is bits per pixel per frame at the target rate: below `lowBitsPerPixel` the
/// picture is blocky enough that fewer pixels (or frames) look better; a step back up needs
/// `highBitsPerPixel` at the larger size (hysteresis) and `upDelay` since the last change, so
/// a short dip does not make the resolution flap. Steps down follow at `downDelay`.
struct BandwidthAdaptation: Sendable {
    struct Output: Equatable, Sendable {
        /// Divide the source's width and height by this (≥ 1).
        var scale: Double
        /// At most this many frames per second.
        var fps: Double
        /// The encoder runs below what was asked because of bandwidth.
        var limited: Bool
    }

    static let scales: [Double] = [1, 4.0 / 3, 2, 8.0 / 3, 4]
    var lowBitsPerPixel = 0.04
    /// libwebrtc's bandwidth scaler starts H.264 at 720p30 from 1.5 Mbit/s and 540p30 from
    /// 800 kbit/s (0.054 and 0.051 bit per pixel). 0.07 asked 1.94 Mbit/s for 720p: back on a
    /// 2.5 Mbit/s link, an estimate that settled under that kept 540p for good (a CI run of the
    /// bottleneck step test ended at 960 wide).
    var highBitsPerPixel = 0.055
    /// The start-up size is the one a settled estimate would step up to, not the first to be
    /// stepped down.
    var startBitsPerPixel = 0.055
    var downDelay: Duration = .milliseconds(1000)
    var upDelay: Duration = .seconds(3)
    static let minFramerate = 5.0
    /// No step goes below this many pixels (160x90).
    static let minimumPixels = 160.0 * 90

    /// Bits per pixel per frame at `targetBitrate` for a source of `pixels` divided by `scales[scaleIndex]`.
    static func bitsPerPixel(_ targetBitrate: Int, pixels: Double, scaleIndex: Int, fps: Double) -> Double {
        let s = scales[scaleIndex]
        return Double(targetBitrate) / (pixels / (s * s) * max(fps, 1))
    }

    private(set) var scaleIndex = 0
    private(set) var fpsCap: Double?
    private(set) var resolutionChanges = 0
    private var lastChange: ContinuousClock.Instant?
    /// Whether `start` picked a size.
    private var started = false

    /// The adapted size and rate for a source frame of `width`×`height` at `fps`.
    mutating func adapt(width: Int, height: Int, fps: Double, targetBitrate: Int, preference: DegradationPreference,
                        now: ContinuousClock.Instant) -> Output {
        let pixels = Double(width * height)
        func bitsPerPixel(scaleIndex: Int, fps: Double) -> Double {
            Self.bitsPerPixel(targetBitrate, pixels: pixels, scaleIndex: scaleIndex, fps: fps)
        }
        let canChangeDown = lastChange.map { now - $0 >= downDelay } ?? true
        let canChangeUp = lastChange.map { now - $0 >= upDelay } ?? true
        let currentFps = min(fps, fpsCap ?? fps)
        let quality = bitsPerPixel(scaleIndex: scaleIndex, fps: currentFps)
        if quality < lowBitsPerPixel, canChangeDown {
            if stepDown(preference: preference, pixels: pixels, minimumPixels: Self.minimumPixels, fps: fps,
                        bitsPerPixel: bitsPerPixel) { lastChange = now }
        } else if canChangeUp {
            if stepUp(fps: fps, bitsPerPixel: bitsPerPixel) { lastChange = now }
        }
        let outFps = min(fps, fpsCap ?? fps)
        return Output(scale: Self.scales[scaleIndex], fps: outFps, limited: scaleIndex > 0 || outFps < fps)
    }

    private mutating func stepDown(preference: DegradationPreference, pixels: Double, minimumPixels: Double, fps: Double,
                                   bitsPerPixel: (Int, Double) -> Double) -> Bool {
        func scalable(from index: Int) -> Bool {
            index + 1 < Self.scales.count && pixels / (Self.scales[index + 1] * Self.scales[index + 1]) >= minimumPixels
        }
        let canScale = scalable(from: scaleIndex)
        let current = fpsCap ?? fps
        let canSlow = current > Self.minFramerate
        switch preference {
        case .maintainFramerate:
            guard canScale else { return false }
            scaleIndex += 1
            while bitsPerPixel(scaleIndex, current) < lowBitsPerPixel, scalable(from: scaleIndex) { scaleIndex += 1 }
            resolutionChanges += 1
        case .maintainResolution:
            guard canSlow else { return false }
            fpsCap = max(Self.minFramerate, current * 2 / 3)
        case .balanced:
            // Down to half size first (where detail costs most), then the rate, then size again.
            if scaleIndex < 2, canScale {
                scaleIndex += 1
                while scaleIndex < 2, bitsPerPixel(scaleIndex, current) < lowBitsPerPixel, scalable(from: scaleIndex) {
                    scaleIndex += 1
                }
                resolutionChanges += 1
            } else if canSlow, current > fps / 2 {
                fpsCap = max(Self.minFramerate, current * 2 / 3)
            } else if canScale {
                scaleIndex += 1
                resolutionChanges += 1
            } else if canSlow {
                fpsCap = max(Self.minFramerate, current * 2 / 3)
            } else {
                return false
            }
        }
        return true
    }

    /// Before the estimate is settled (the start-up probes have not had their time): the size the
    /// unconfirmed estimate carries at `startBitsPerPixel`, chosen at the first frame and then only
    /// raised as probing confirms more. libwebrtc does the same from its 300 kbit/s start (its
    /// initial frame dropping): a 720p keyframe at the start rate is what overflowed a narrow
    /// uplink's queue. Only the size moves; the frame rate is left alone. Changes do not start the
    /// `upDelay`/`downDelay` clocks, so the settled steps may follow at once.
    mutating func start(width: Int, height: Int, fps: Double, targetBitrate: Int) -> Output {
        let pixels = Double(width * height)
        var index = Self.scales.count - 1
        while index > 0, Self.bitsPerPixel(targetBitrate, pixels: pixels, scaleIndex: index - 1, fps: fps) >= startBitsPerPixel {
            index -= 1
        }
        while index > 0, pixels / (Self.scales[index] * Self.scales[index]) < Self.minimumPixels { index -= 1 }
        if !started || index < scaleIndex {
            if started || index != 0 { resolutionChanges += 1 }
            scaleIndex = index
            started = true
        }
        return Output(scale: Self.scales[scaleIndex], fps: fps, limited: scaleIndex > 0)
    }

    /// Undoes the last kind of step if the larger setting would still have `highBitsPerPixel`.
    private mutating func stepUp(fps: Double, bitsPerPixel: (Int, Double) -> Double) -> Bool {
        let current = fpsCap ?? fps
        // The frame rate comes back before the resolution.
        if let cap = fpsCap {
            let next = min(fps, cap * 3 / 2)
            guard bitsPerPixel(scaleIndex, next) >= highBitsPerPixel else { return false }
            fpsCap = next >= fps ? nil : next
            return true
        }
        guard scaleIndex > 0, bitsPerPixel(scaleIndex - 1, current) >= highBitsPerPixel else { return false }
        scaleIndex -= 1
        resolutionChanges += 1
        return true
    }
}
