import CV4L2
import Glibc

extension V4L2ControlMap {
    /// Writes `setting` (modes first, as drivers refuse values whose auto mode is on) and reads
    /// the result back with G_CTRL: what the device actually set, in model units.
    func apply(_ setting: CameraSetting, io: any V4L2DeviceIO) throws(CameraError) -> CameraSetting {
        let path = io.path
        func info(_ id: UInt32, _ what: String) throws(CameraError) -> V4L2ControlInfo {
            guard let c = controls[id] else { throw CameraError(.unsupported, device: path, "has no \(what) control") }
            return c
        }
        func set(_ id: UInt32, _ value: Int64) throws(CameraError) {
            do {
                try io.setControl(id: id, value: Int32(clamping: value))
            } catch {
                throw V4L2ControlMap.cameraError(error, path: path, "cannot set \(controls[id]?.name ?? String(id)) to \(value)")
            }
        }
        func get(_ id: UInt32) throws(CameraError) -> Int64 {
            do { return Int64(try io.getControl(id: id)) } catch {
                throw V4L2ControlMap.cameraError(error, path: path, "cannot read \(controls[id]?.name ?? String(id))")
            }
        }
        func manualExposure() throws(CameraError) {
            if hasManualExposure { try set(V4L2ControlID.autoExposure, Int64(CV4L2_EXPOSURE_MANUAL)) }
        }
        /// Index of the integer-menu item nearest `target`.
        func nearest(_ id: UInt32, _ target: Double, scale: Double) -> Int? {
            menuValues(id).min { abs(Double($0.value) / scale - target) < abs(Double($1.value) / scale - target) }?.index
        }
        func menuValue(_ id: UInt32, index: Int64) -> Int64? { menuValues(id).first { $0.index == Int(index) }?.value }

        switch setting {
        case .exposureMode(let mode):
            let id = V4L2ControlID.autoExposure
            _ = try info(id, "auto_exposure")
            switch mode {
            case .continuousAuto:
                guard let v = autoExposureValue else { throw CameraError(.unsupported, device: path, "has no automatic exposure mode") }
                try set(id, Int64(v))
            case .custom:
                guard hasManualExposure else { throw CameraError(.unsupported, device: path, "has no manual exposure mode") }
                try set(id, Int64(CV4L2_EXPOSURE_MANUAL))
            case .locked:
                // Keep the exposure auto exposure chose: read it, go manual, write it back.
                guard hasManualExposure else { throw CameraError(.unsupported, device: path, "has no manual exposure mode") }
                let current = try get(V4L2ControlID.exposureTimeAbsolute)
                try set(id, Int64(CV4L2_EXPOSURE_MANUAL))
                try set(V4L2ControlID.exposureTimeAbsolute, current)
            }
            let now = try get(id)
            if now == Int64(CV4L2_EXPOSURE_MANUAL) { return .exposureMode(mode == .locked ? .locked : .custom) }
            return .exposureMode(.continuousAuto)

        case .exposureDuration(let seconds):
            let id = V4L2ControlID.exposureTimeAbsolute
            _ = try info(id, "exposure_time_absolute")
            try manualExposure()
            try set(id, Int64((seconds * Self.exposureUnitsPerSecond).rounded()))
            return .exposureDuration(Double(try get(id)) / Self.exposureUnitsPerSecond)

        case .iso(let iso):
            guard let id = isoControl, let c = controls[id] else { throw CameraError(.unsupported, device: path, "has no iso control") }
            try manualExposure()
            if id == V4L2ControlID.isoSensitivity {
                if has(V4L2ControlID.isoSensitivityAuto) { try set(V4L2ControlID.isoSensitivityAuto, Int64(CV4L2_ISO_SENSITIVITY_MANUAL)) }
                if c.type == .integerMenu {
                    guard let index = nearest(id, iso, scale: 1) else { throw CameraError(.unsupported, device: path, "has an empty ISO menu") }
                    try set(id, Int64(index))
                    return .iso(Double(menuValue(id, index: try get(id)) ?? 0))
                }
                try set(id, Int64(iso.rounded()))
                return .iso(Double(try get(id)))
            }
            try set(id, gainFromISO(c, iso))
            return .iso(isoFromGain(c, try get(id)))

        case .exposureBias(let ev):
            let id = V4L2ControlID.autoExposureBias
            let c = try info(id, "auto_exposure_bias")
            if c.type == .integerMenu {
                guard let index = nearest(id, ev, scale: 1000) else { throw CameraError(.unsupported, device: path, "has an empty exposure bias menu") }
                try set(id, Int64(index))
                return .exposureBias(Double(menuValue(id, index: try get(id)) ?? 0) / 1000)
            }
            try set(id, Int64((ev * 1000).rounded()))
            return .exposureBias(Double(try get(id)) / 1000)

        case .whiteBalanceMode(let mode):
            let id = V4L2ControlID.whiteBalanceAutomatic
            _ = try info(id, "white_balance_automatic")
            try set(id, mode == .continuousAuto ? 1 : 0)
            return .whiteBalanceMode(try get(id) != 0 ? .continuousAuto : .locked)

        case .whiteBalanceTemperature(let kelvin):
            let id = V4L2ControlID.whiteBalanceTemperature
            _ = try info(id, "white_balance_temperature")
            if has(V4L2ControlID.whiteBalanceAutomatic) { try set(V4L2ControlID.whiteBalanceAutomatic, 0) }
            try set(id, Int64(kelvin.rounded()))
            return .whiteBalanceTemperature(Double(try get(id)))

        case .zoom(let factor):
            let id = V4L2ControlID.zoomAbsolute
            let c = try info(id, "zoom_absolute")
            let base = zoomBase(c)
            try set(id, c.minimum + Int64(((factor - 1) * base).rounded()))
            return .zoom(1 + Double(try get(id) - c.minimum) / base)

        case .focusMode(let mode):
            let id = V4L2ControlID.focusAutomaticContinuous
            _ = try info(id, "focus_automatic_continuous")
            switch mode {
            case .continuousAuto: try set(id, 1)
            case .locked: try set(id, 0)
            case .autoFocus:
                _ = try info(V4L2ControlID.autoFocusStart, "auto_focus_start")
                try set(id, 0)
                try set(V4L2ControlID.autoFocusStart, 1)
                return .focusMode(.autoFocus)
            }
            return .focusMode(try get(id) != 0 ? .continuousAuto : .locked)

        case .focusPosition(let position):
            let id = V4L2ControlID.focusAbsolute
            let c = try info(id, "focus_absolute")
            if has(V4L2ControlID.focusAutomaticContinuous) { try set(V4L2ControlID.focusAutomaticContinuous, 0) }
            let span = Double(c.maximum - c.minimum)
            // Larger focus_absolute = closer (V4L2 spec), so position 1 (far) is the minimum.
            try set(id, c.maximum - Int64((position * span).rounded()))
            return .focusPosition(span > 0 ? Double(c.maximum - (try get(id))) / span : 0)

        case .torch(let torch):
            let mode = V4L2ControlID.flashLEDMode
            if torch == .off && !hasTorch { return .torch(.off) }   // no torch is an off torch
            guard hasTorch else { throw CameraError(.unsupported, device: path, "has no torch control") }
            if torch == .off {
                try set(mode, Int64(CV4L2_FLASH_LED_MODE_NONE))
                return try get(mode) == Int64(CV4L2_FLASH_LED_MODE_TORCH) ? .torch(.on) : .torch(.off)
            }
            let intensity = controls[V4L2ControlID.flashTorchIntensity]
            if case .level(let level) = torch, let c = intensity, c.maximum > 0 {
                try set(c.id, min(max(Int64((level * Double(c.maximum)).rounded()), c.minimum), c.maximum))
            }
            try set(mode, Int64(CV4L2_FLASH_LED_MODE_TORCH))
            guard try get(mode) == Int64(CV4L2_FLASH_LED_MODE_TORCH) else { return .torch(.off) }
            if case .level = torch, let c = intensity, c.maximum > 0 {
                return .torch(.level(Double(try get(c.id)) / Double(c.maximum)))
            }
            return .torch(.on)

        case .exposurePoint:
            throw CameraError(.unsupported, device: path, "has no exposure point of interest (V4L2 has no standard control for one)")
        case .focusPoint:
            throw CameraError(.unsupported, device: path, "has no focus point of interest (V4L2 has no standard control for one)")
        }
    }

    /// A failed ioctl as a camera error: unplugged → deviceLost, busy → busy, else io.
    static func cameraError(_ e: V4L2Error, path: String, _ what: String) -> CameraError {
        let message = "\(what): \(e.text)"
        switch e.errno {
        case ENODEV, ENXIO: return CameraError(.deviceLost, device: path, message)
        case EBUSY: return CameraError(.busy, device: path, message)
        case EINVAL: return CameraError(.unsupported, device: path, message)
        default: return CameraError(.io, device: path, message)
        }
    }
}
