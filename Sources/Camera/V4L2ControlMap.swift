import CV4L2

/// The V4L2 controls a device has that the camera model maps, and the conversions between
/// V4L2 units and the model's:
/// - exposureDuration (s) ↔ exposure_time_absolute in 100 µs units;
/// - iso ↔ ISO_SENSITIVITY (integer menu of ISO values) when present, else ↔ gain: V4L2 gain
///   has no unit, so gain's minimum is taken as ISO 100 and its maximum as ISO 1600 (four stops,
///   a typical webcam's analog + digital gain), linear in between;
/// - zoom factor ↔ zoom_absolute / its minimum (UVC: 100 = 1×);
/// - focusPosition 0 (near) … 1 (far) ↔ focus_absolute, reversed: the V4L2 spec says larger
///   values set the focus closer to the camera;
/// - exposureBias EV ↔ auto_exposure_bias (integer menu, or integer, in milli-EV);
/// - torch level 0…1 ↔ flash_torch_intensity / its maximum, with flash_led_mode torch / none.
struct V4L2ControlMap: Sendable {
    var controls: [UInt32: V4L2ControlInfo] = [:]
    var menus: [UInt32: [V4L2MenuItem]] = [:]

    static let isoMin = 100.0, isoMaxForGain = 1600.0
    /// exposure_time_absolute units per second (one unit is 100 µs). Dividing by it keeps
    /// 2047 units exactly 0.2047 s.
    static let exposureUnitsPerSecond = 10_000.0

    init(io: any V4L2DeviceIO) throws(V4L2Error) {
        for c in try io.controls() {
            controls[c.id] = c
            if c.type == .menu || c.type == .integerMenu { menus[c.id] = try io.menuItems(c) }
        }
    }

    func has(_ id: UInt32) -> Bool { controls[id] != nil }
    func menuHas(_ id: UInt32, _ index: Int) -> Bool { menus[id]?.contains { $0.index == index } ?? false }

    var autoExposureValue: Int32? {
        if menuHas(V4L2ControlID.autoExposure, Int(CV4L2_EXPOSURE_AUTO)) { return Int32(CV4L2_EXPOSURE_AUTO) }
        if menuHas(V4L2ControlID.autoExposure, Int(CV4L2_EXPOSURE_APERTURE_PRIORITY)) { return Int32(CV4L2_EXPOSURE_APERTURE_PRIORITY) }
        return nil
    }
    var hasManualExposure: Bool {
        menuHas(V4L2ControlID.autoExposure, Int(CV4L2_EXPOSURE_MANUAL)) && has(V4L2ControlID.exposureTimeAbsolute)
    }
    var isoControl: UInt32? {
        has(V4L2ControlID.isoSensitivity) ? V4L2ControlID.isoSensitivity : has(V4L2ControlID.gain) ? V4L2ControlID.gain : nil
    }
    var hasTorch: Bool { menuHas(V4L2ControlID.flashLEDMode, Int(CV4L2_FLASH_LED_MODE_TORCH)) }

    /// Integer-menu values (sorted by value) of a control.
    func menuValues(_ id: UInt32) -> [(index: Int, value: Int64)] {
        (menus[id] ?? []).compactMap { m in m.value.map { (m.index, $0) } }.sorted { $0.value < $1.value }
    }

    private static func uniformStep(_ values: [Double]) -> Double {
        guard values.count > 1 else { return 0 }
        let d = values[1] - values[0]
        return zip(values, values.dropFirst()).allSatisfy { abs(($1 - $0) - d) < 1e-9 } ? d : 0
    }

    var capabilities: CameraCapabilities {
        var caps = CameraCapabilities()
        if let c = controls[V4L2ControlID.exposureTimeAbsolute] {
            let u = Self.exposureUnitsPerSecond
            caps.ranges[.exposureDuration] = ControlRange(min: Double(c.minimum) / u, max: Double(c.maximum) / u,
                                                          step: Double(c.step) / u, defaultValue: Double(c.defaultValue) / u)
        }
        if let id = isoControl, let c = controls[id] {
            if c.type == .integerMenu {
                let values = menuValues(id).map { Double($0.value) }
                let def = menuValues(id).first { $0.index == Int(c.defaultValue) }.map { Double($0.value) } ?? values.first ?? Self.isoMin
                if let lo = values.first, let hi = values.last {
                    caps.ranges[.iso] = ControlRange(min: lo, max: hi, step: Self.uniformStep(values), defaultValue: def)
                }
            } else if id == V4L2ControlID.isoSensitivity {
                caps.ranges[.iso] = ControlRange(min: Double(c.minimum), max: Double(c.maximum), step: Double(c.step),
                                                 defaultValue: Double(c.defaultValue))
            } else {
                caps.ranges[.iso] = ControlRange(min: Self.isoMin, max: Self.isoMaxForGain,
                                                 step: Double(c.step) * gainScale(c), defaultValue: isoFromGain(c, c.defaultValue))
            }
        }
        if let c = controls[V4L2ControlID.autoExposureBias] {
            if c.type == .integerMenu {
                let values = menuValues(c.id).map { Double($0.value) / 1000 }
                let def = menuValues(c.id).first { $0.index == Int(c.defaultValue) }.map { Double($0.value) / 1000 } ?? 0
                if let lo = values.first, let hi = values.last {
                    caps.ranges[.exposureBias] = ControlRange(min: lo, max: hi, step: Self.uniformStep(values), defaultValue: def)
                }
            } else {
                caps.ranges[.exposureBias] = ControlRange(min: Double(c.minimum) / 1000, max: Double(c.maximum) / 1000,
                                                          step: Double(c.step) / 1000, defaultValue: Double(c.defaultValue) / 1000)
            }
        }
        if let c = controls[V4L2ControlID.whiteBalanceTemperature] {
            caps.ranges[.whiteBalanceTemperature] = ControlRange(min: Double(c.minimum), max: Double(c.maximum),
                                                                 step: Double(c.step), defaultValue: Double(c.defaultValue))
        }
        if let c = controls[V4L2ControlID.zoomAbsolute] {
            let base = zoomBase(c)
            caps.ranges[.zoom] = ControlRange(min: 1, max: 1 + Double(c.maximum - c.minimum) / base, step: Double(c.step) / base,
                                              defaultValue: 1 + Double(c.defaultValue - c.minimum) / base)
        }
        if let c = controls[V4L2ControlID.focusAbsolute], c.maximum > c.minimum {
            let span = Double(c.maximum - c.minimum)
            caps.ranges[.focusPosition] = ControlRange(min: 0, max: 1, step: Double(c.step) / span,
                                                       defaultValue: Double(c.maximum - c.defaultValue) / span)
        }
        if hasTorch {
            if let c = controls[V4L2ControlID.flashTorchIntensity], c.maximum > 0 {
                caps.ranges[.torchLevel] = ControlRange(min: 0, max: 1, step: 0, defaultValue: Double(c.defaultValue) / Double(c.maximum))
            } else {
                caps.ranges[.torchLevel] = ControlRange(min: 0, max: 1, step: 1, defaultValue: 1)
            }
        }
        if autoExposureValue != nil { caps.exposureModes.insert(.continuousAuto) }
        if hasManualExposure { caps.exposureModes.formUnion([.custom, .locked]) }
        if has(V4L2ControlID.whiteBalanceAutomatic) { caps.whiteBalanceModes = [.continuousAuto, .locked] }
        if has(V4L2ControlID.focusAutomaticContinuous) {
            caps.focusModes = [.continuousAuto, .locked]
            if has(V4L2ControlID.autoFocusStart) { caps.focusModes.insert(.autoFocus) }
        }
        return caps
    }

    // Unit conversions.
    func zoomBase(_ c: V4L2ControlInfo) -> Double { c.minimum > 0 ? Double(c.minimum) : Double(max(c.step, 1)) * 100 }
    func gainScale(_ c: V4L2ControlInfo) -> Double {
        c.maximum > c.minimum ? (Self.isoMaxForGain - Self.isoMin) / Double(c.maximum - c.minimum) : 0
    }
    func isoFromGain(_ c: V4L2ControlInfo, _ gain: Int64) -> Double { Self.isoMin + Double(gain - c.minimum) * gainScale(c) }
    func gainFromISO(_ c: V4L2ControlInfo, _ iso: Double) -> Int64 {
        let s = gainScale(c)
        return s > 0 ? c.minimum + Int64(((iso - Self.isoMin) / s).rounded()) : c.minimum
    }
}
