import Foundation

/// Gamma-2.2 encoding and the sensor's response curve.
enum ToneModel {
    /// 8-bit gamma-encoded value → linear 0...1.
    static let linearTable: [Double] = (0..<256).map { pow(Double($0) / 255, 2.2) }

    /// Linear sensor signal, where 1 is full scale, to an 8-bit output value: straight up to a
    /// knee at 0.8, then an exponential shoulder that approaches 1 (soft clip, strictly
    /// increasing), then gamma 1/2.2.
    static func encode(_ signal: Double) -> UInt8 {
        let knee = 0.8
        var s = max(0, signal.isFinite ? signal : 0)
        if s > knee { s = knee + (1 - knee) * (1 - exp(-(s - knee) / (1 - knee))) }
        return UInt8(clamping: Int((255 * pow(s, 1 / 2.2)).rounded()))
    }
}

/// The light and the sensor: how much signal a surface gives for a light level and an exposure,
/// and what colour the light has.
enum SensorModel {
    /// Signal = albedo × illuminance (lux) × ISO × duration (s) × `sensitivity`. Chosen so that
    /// 250 lux at ISO 100 and 1/50 s renders an 18% grey card at the mid-grey signal 0.18.
    static let sensitivity = 1.0 / 500
    /// What auto exposure aims the metered mean signal at, before the bias.
    static let midGrey = 0.18
    /// Auto exposure keeps the shutter at or below this (a 30 fps stream cannot expose longer).
    static let longestAutoDuration = 1.0 / 30
    /// Torch light at full level, in lux, reaching surfaces at each depth (near, mid, far).
    static let torchLux: [Double] = [0, 40, 250]   // indexed by depth class: far, mid, near
    /// The lens position at which the subject (face / chart) is sharp; continuous and single-shot
    /// auto focus find it.
    static let subjectLensPosition = 0.6

    /// Relative red, green, blue of black-body light at `kelvin` (Planck's law sampled at 610,
    /// 550 and 465 nm), normalised so that 6500 K is (1, 1, 1) and green is always 1.
    static func lightColour(kelvin: Double) -> (r: Double, g: Double, b: Double) {
        func planck(_ nm: Double, _ t: Double) -> Double {
            let l = nm * 1e-9
            return 1 / (pow(l, 5) * (exp(1.4388e-2 / (l * t)) - 1))
        }
        let t = min(max(kelvin.isFinite ? kelvin : 6500, 1000), 40000)
        func rel(_ nm: Double) -> Double { (planck(nm, t) / planck(550, t)) / (planck(nm, 6500) / planck(550, 6500)) }
        return (rel(610), 1, rel(465))
    }

    /// Per-channel gains the picture gets when light of `light` K is shot with white balance
    /// set to `setting` K. The camera divides by the colour of the light it was told to expect:
    /// set to the light's own temperature, grey stays grey; set higher (it expects bluer light
    /// than there is) it boosts red and cuts blue, so the picture turns warmer — R/B rises with
    /// the setting, the usual camera convention; set lower, the picture turns bluer.
    static func whiteBalanceGains(light: Double, setting: Double) -> (r: Double, g: Double, b: Double) {
        let l = lightColour(kelvin: light), s = lightColour(kelvin: setting)
        return (l.r / s.r, 1, l.b / s.b)
    }
}
