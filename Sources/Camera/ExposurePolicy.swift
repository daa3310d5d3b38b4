import Foundation

/// The reference app's brightness-driven exposure: the scene's brightness (APEX Bv, as EXIF's
/// BrightnessValue) picks a band, and each band fixes ISO, exposure time and frame rate, so a
/// dark room gets a long exposure and high gain instead of auto exposure's noisy guess.
///
/// Done better than the original: bands are half-open (its `> 1 && < 2` tests let exactly 1.0
/// through every band), a band change needs `hysteresis` EV past the edge (no flapping on a
/// boundary), the exposure time it asked for is actually set (the original passed
/// AVCaptureExposureDurationCurrent and dropped it), and the frame rate follows the exposure time
/// (a 1/5 s exposure cannot run at 30 fps).
public struct ExposurePolicy: Sendable, Hashable {
    public enum ISOChoice: Sendable, Hashable {
        case absolute(Double)
        /// The device's maximum ISO less this much.
        case belowMax(Double)

        public func value(maxISO: Double) -> Double {
            switch self {
            case .absolute(let v): return v
            case .belowMax(let d): return maxISO - d
            }
        }
    }

    public struct Band: Sendable, Hashable {
        /// Brightness at and above which this band applies (the first band's is −∞).
        public var lowerBound: Double
        public var iso: ISOChoice
        /// Exposure time is 1/`durationDenominator` s.
        public var durationDenominator: Double
        public init(lowerBound: Double, iso: ISOChoice, durationDenominator: Double) {
            self.lowerBound = lowerBound
            self.iso = iso
            self.durationDenominator = durationDenominator
        }
        public var duration: Double { 1 / durationDenominator }
    }

    /// Where auto exposure (and focus, where the camera has a point of interest) looks.
    public enum Metering: String, Sendable, Hashable {
        /// The camera's own point of interest, the centre unless set (auto exposure weighs it most).
        case centerWeighted
        /// The largest face in view (face detection must be on), the centre when there is none.
        case faces
    }

    /// Darkest first. Empty: no brightness table, auto exposure stays in charge.
    public var bands: [Band]
    public var hysteresis: Double
    public var metering: Metering

    public init(bands: [Band], hysteresis: Double = 0.2, metering: Metering = .centerWeighted) {
        self.bands = bands.sorted { $0.lowerBound < $1.lowerBound }
        self.hysteresis = hysteresis
        self.metering = metering
    }

    /// Auto exposure and focus on the largest face, no brightness table.
    public static let faces = ExposurePolicy(bands: [], metering: .faces)

    /// This policy with another metering.
    public func metering(_ m: Metering) -> ExposurePolicy {
        var p = self
        p.metering = m
        return p
    }

    /// The reference app's table (its bands above Bv 0 all set ISO 500 at 1/30 s).
    public static let reference = ExposurePolicy(bands: [
        Band(lowerBound: -.infinity, iso: .belowMax(150), durationDenominator: 5),
        Band(lowerBound: -5, iso: .belowMax(200), durationDenominator: 10),
        Band(lowerBound: -4, iso: .belowMax(250), durationDenominator: 15),
        Band(lowerBound: -3.5, iso: .belowMax(200), durationDenominator: 20),
        Band(lowerBound: -3, iso: .belowMax(200), durationDenominator: 25),
        Band(lowerBound: -2.5, iso: .belowMax(200), durationDenominator: 30),
        Band(lowerBound: -2, iso: .belowMax(200), durationDenominator: 35),
        Band(lowerBound: -1, iso: .belowMax(200), durationDenominator: 40),
        Band(lowerBound: 0, iso: .absolute(500), durationDenominator: 30),
    ])

    /// The band for `brightness`, staying in `current` unless the brightness is `hysteresis` past
    /// its edges.
    public func band(for brightness: Double, current: Int? = nil) -> Int {
        guard !bands.isEmpty else { return 0 }
        var index = 0
        for (i, b) in bands.enumerated() where brightness >= b.lowerBound { index = i }
        if let c = current, c >= 0, c < bands.count, c != index {
            let low = bands[c].lowerBound
            let high = c + 1 < bands.count ? bands[c + 1].lowerBound : .infinity
            if brightness >= low - hysteresis && brightness < high + hysteresis { return c }
        }
        return index
    }

    /// What band `index` sets on a device whose ISO goes up to `maxISO`, with the frame rate no
    /// higher than `requestedFPS` nor than one frame per exposure.
    public func settings(band index: Int, maxISO: Double, requestedFPS: Double) -> (iso: Double, duration: Double, fps: Double) {
        // No table: what auto exposure would pick for a mid-grey scene (callers check `bands` first).
        guard !bands.isEmpty else { return (min(100, maxISO), 1 / max(requestedFPS, 1), requestedFPS) }
        let b = bands[min(max(index, 0), bands.count - 1)]
        return (b.iso.value(maxISO: maxISO), b.duration, min(requestedFPS, b.durationDenominator))
    }
}

/// Scene brightness from a frame.
public enum BrightnessMeter {
    /// APEX brightness value: 0 for a mid-grey (luma 118) frame exposed at ISO 100 for 1/30 s;
    /// each stop of luma, of ISO or of exposure time moves it by 1.
    public static func brightnessValue(meanLuma: Double, iso: Double, duration: Double) -> Double {
        let l = max(meanLuma, 1)
        return log2(l / 118) - log2(max(iso, 1) / 100) - log2(max(duration, 1e-6) * 30)
    }

    /// Mean luma of a Y plane, every `step`-th pixel of every `step`-th row.
    public static func meanLuma(_ y: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int, step: Int = 8) -> Double {
        var sum = 0, n = 0
        var row = 0
        while row < height {
            let p = y + row * stride
            var x = 0
            while x < width { sum += Int(p[x]); n += 1; x += step }
            row += step
        }
        return n == 0 ? 0 : Double(sum) / Double(n)
    }
}
