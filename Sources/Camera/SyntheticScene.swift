import Capture
import CYUV
import Foundation
import Media

/// The world the synthetic cameras look at and the camera model that turns it into frames, as a
/// pure deterministic function: the same arguments give the same pixels, no threads needed.
///
/// What each control does to the picture:
/// - **Exposure.** Signal = albedo × light (lux) × ISO × duration × `SensorModel.sensitivity`,
///   then a soft-clipping tone curve and gamma 2.2 (`ToneModel`). Continuous auto exposure picks
///   ISO and duration so the metered mean signal (a mean in the gamma domain) is 0.18 × 2^bias (shutter ≤ 1/30 s first, then
///   ISO, both within the device's ranges — a dark enough room stays dark); metering weighs a
///   Gaussian around the exposure point of interest over a uniform floor, so metering on a bright
///   region darkens the picture. Custom and locked exposure use `controls.iso` and
///   `controls.exposureDuration` (the stream stores the auto values there when it locks).
/// - **White balance.** `whiteBalanceGains`: a higher temperature setting makes the picture
///   warmer (R/B rises); continuous auto matches the light, so grey stays grey.
/// - **Zoom** crops the centre by 1/zoom and scales it back up (libyuv bilinear).
/// - **Focus.** Continuous and single-shot auto focus are sharp; a locked lens position blurs
///   the picture by |position − `subjectLensPosition`| × shorter side / 24 pixels (libyuv box blur).
/// - **Torch** (devices that have one) adds 250 lux × level on the near subject, 40 lux on the
///   middle distance, nothing far away.
/// - **Orientation.** The sensor is fixed to the phone: the upright scene is rendered turned by
///   the inverse of `orientation.frameRotation(for:)`, so turning the buffer by that rotation
///   (what the capturer tags the frame with) shows it upright. Orientations without an "up" (face
///   up/down, unknown) render as `.r0`. No mirroring here: the capturer mirrors front frames.
///
/// Telling the cameras apart after encoding: the front camera's picture has a large **magenta**
/// block at the upper left of the upright scene, the back camera's a large **cyan** one
/// (`identify`). A yellow ball circles near the top so consecutive frames differ.
///
/// **Faces** (`faces`, front camera only) are drawn per frame where their script puts them,
/// metered by auto exposure like the rest of the scene, and reported as the camera's face
/// metadata (`faces(device:…)`).
public struct SyntheticScene: Sendable, Hashable {
    /// How bright the world is, in lux (400: an office; 1–5: a dark room).
    public var illuminance: Double
    /// Colour temperature of the light in kelvin (4500: mixed indoor light).
    public var illuminantTemperature: Double
    /// The faces in front of the front camera (default: the subject in the middle).
    public var faces: [Face]

    public init(illuminance: Double = 400, illuminantTemperature: Double = 4500, faces: [Face] = [.subject]) {
        self.illuminance = illuminance
        self.illuminantTemperature = illuminantTemperature
        self.faces = faces
    }

    /// The lens position at which the near subject (face / chart) is sharp.
    public static let subjectLensPosition = SensorModel.subjectLensPosition

    /// One frame of `device` (its position picks the scene, its ranges bound auto exposure) at
    /// `width`×`height` in `format`, as the sensor sees it with `controls` applied while the
    /// phone is held in `orientation`. `frameNumber` moves the ball.
    public func render(device: CaptureDevice, width: Int, height: Int, format: PixelFormat = .i420,
                       controls: CameraControlState, orientation: DeviceOrientation = .unknown,
                       timestampNs: Int64 = 0, frameNumber: UInt64 = 0) -> VideoFrame {
        SyntheticRenderer().render(scene: self, device: device, width: width, height: height, format: format,
                                   controls: controls, rotation: orientation.frameRotation(for: device.position) ?? .r0,
                                   timestampNs: timestampNs, frameNumber: frameNumber)
    }

    /// The ISO and exposure duration the camera uses for `controls` at `frameNumber` (faces move):
    /// auto exposure's choice in continuous auto, the stored values in custom and locked mode.
    public func exposure(device: CaptureDevice, width: Int, height: Int, controls: CameraControlState,
                         orientation: DeviceOrientation = .unknown, frameNumber: UInt64 = 0) -> (iso: Double, duration: Double) {
        exposure(device: device, width: width, height: height, controls: controls,
                 rotation: orientation.frameRotation(for: device.position) ?? .r0, frameNumber: frameNumber)
    }

    func exposure(device: CaptureDevice, width: Int, height: Int, controls: CameraControlState,
                  rotation: VideoRotation, frameNumber: UInt64) -> (iso: Double, duration: Double) {
        let (cw, ch) = Self.uprightSize(width: VideoFrameBuffer.clampedDimension(width, minimum: 2),
                                        height: VideoFrameBuffer.clampedDimension(height, minimum: 2), rotation: rotation)
        let canvas = SyntheticCanvas.shared(position: device.position, width: cw, height: ch)
        return exposure(device: device, canvas: canvas, controls: controls, rotation: rotation, frameNumber: frameNumber)
    }

    /// The white balance temperature in effect: the light's own in continuous auto, else the setting.
    public func whiteBalanceTemperature(controls: CameraControlState) -> Double {
        controls.whiteBalanceMode == .continuousAuto ? illuminantTemperature : controls.whiteBalanceTemperature
    }

    /// Burns the test-pattern band (frame number, wall clock; `TestPattern.read` decodes it) into
    /// the top of an I420 `buffer` — for a capturer to call on the final, upright and mirrored
    /// picture, so the marker reads correctly wherever the frame goes.
    public static func stampMarker(into buffer: VideoFrameBuffer, frameNumber: UInt32, wallClockMs: UInt64) {
        TestPattern.stampBand(frameNumber: frameNumber, wallClockMs: wallClockMs, into: buffer)
    }

    /// Which synthetic camera a (possibly encoded, scaled, rotated or mirrored) frame shows:
    /// `.front` when strongly magenta chroma dominates, `.back` when strongly cyan chroma does,
    /// nil when neither covers 2% of the picture (another source, or zoomed in past the block).
    public static func identify(_ frame: VideoFrame) -> CameraPosition? {
        let b = frame.buffer.converted(to: .i420)
        let cw = (b.width + 1) / 2, ch = (b.height + 1) / 2
        var magenta = 0, cyan = 0
        let u = b.planePointer(1), v = b.planePointer(2)
        for row in 0..<ch {
            let ur = u + row * b.strides[1], vr = v + row * b.strides[2]
            for x in 0..<cw {
                let cu = Int(ur[x]), cv = Int(vr[x])
                if cu > 150 && cv > 160 { magenta += 1 } else if cu > 140 && cv < 90 { cyan += 1 }
            }
        }
        let threshold = cw * ch / 50
        if magenta > threshold && magenta > cyan { return .front }
        if cyan > threshold && cyan > magenta { return .back }
        return nil
    }

    // MARK: camera model

    static func uprightSize(width: Int, height: Int, rotation: VideoRotation) -> (Int, Int) {
        rotation.swapsDimensions ? (height, width) : (width, height)
    }

    /// Torch level 0...1 actually lighting the scene.
    static func torchLevel(device: CaptureDevice, controls: CameraControlState) -> Double {
        guard let range = device.capabilities.ranges[.torchLevel] else { return 0 }
        switch controls.torch {
        case .off: return 0
        case .on: return range.defaultValue > 0 ? range.defaultValue : range.max
        case .level(let l): return range.clamp(l)
        }
    }

    /// Light in lux reaching surfaces at each depth class (far, mid, near).
    func lights(device: CaptureDevice, controls: CameraControlState) -> [Double] {
        let ambient = max(0, illuminance.isFinite ? illuminance : 0)
        let torch = Self.torchLevel(device: device, controls: controls)
        return SensorModel.torchLux.map { ambient + $0 * torch }
    }

    func exposure(device: CaptureDevice, canvas: SyntheticCanvas, controls: CameraControlState,
                  rotation: VideoRotation, frameNumber: UInt64) -> (iso: Double, duration: Double) {
        let ranges = device.capabilities.ranges
        let isoRange = ranges[.iso] ?? ControlRange(min: 100, max: 100, defaultValue: 100)
        let durRange = ranges[.exposureDuration] ?? ControlRange(min: 1.0 / 30, max: 1.0 / 30, defaultValue: 1.0 / 30)
        guard controls.exposureMode == .continuousAuto else {
            return (isoRange.clamp(controls.iso), durRange.clamp(controls.exposureDuration))
        }
        let metered = Self.meter(canvas: canvas, faces: placedFaces(device: device, frameNumber: frameNumber),
                                 lights: lights(device: device, controls: controls),
                                 point: controls.exposurePoint, rotation: rotation, zoom: controls.zoom)
        let bias = ranges[.exposureBias]?.clamp(controls.exposureBias) ?? 0
        // ISO × duration that brings the metered signal to the target.
        let needed = SensorModel.midGrey * pow(2, bias) / max(metered * SensorModel.sensitivity, 1e-12)
        let longest = min(SensorModel.longestAutoDuration, durRange.max)
        let duration = min(max(needed / isoRange.min, durRange.min), max(longest, durRange.min))
        let iso = isoRange.clamp(needed / duration)
        return (iso, duration)
    }

    /// Metered radiance (albedo × lux) of the visible part of the scene: a weighted mean taken in
    /// the gamma-encoded domain (so auto exposure aims the picture's mean luma, not its mean
    /// linear light, at mid-grey; a torch-lit subject in the dark does not blacken the rest),
    /// weights being a uniform floor plus a Gaussian (σ = 0.12 of the picture) around the point
    /// of interest, which is in sensor coordinates of the delivered (zoomed) picture. A point of
    /// interest on a face's skin meters that face instead of the Gaussian (face-driven auto
    /// exposure, as phones do): cells weigh 4× the floor by how much of them is its skin. Grid
    /// cells a face covers are sampled 4×4.
    static func meter(canvas: SyntheticCanvas, faces: [PlacedFace], lights: [Double], point: NormalizedPoint,
                      rotation: VideoRotation, zoom: Double) -> Double {
        let p = point.clamped
        // Sensor buffer → upright picture: the buffer turned clockwise by `rotation`.
        let upright: (Double, Double)
        switch rotation {
        case .r0: upright = (p.x, p.y)
        case .r90: upright = (1 - p.y, p.x)
        case .r180: upright = (1 - p.x, 1 - p.y)
        case .r270: upright = (p.y, 1 - p.x)
        }
        let z = zoom.isFinite ? max(zoom, 1) : 1
        let pu = 0.5 + (upright.0 - 0.5) / z, pv = 0.5 + (upright.1 - 0.5) / z
        let unit = Double(min(canvas.width, canvas.height))
        let metered = faces.last { $0.isSkin(dx: (pu - $0.u) * Double(canvas.width) / unit, dy: (pv - $0.v) * Double(canvas.height) / unit) }
        let n = SyntheticCanvas.gridSize
        let halfVisible = max(0.5 / z, 0.5 / Double(n))
        let sigma = 0.12 / z
        var sum = 0.0, weights = 0.0
        for gy in 0..<n {
            let cv = (Double(gy) + 0.5) / Double(n)
            guard abs(cv - 0.5) <= halfVisible else { continue }
            for gx in 0..<n {
                let cu = (Double(gx) + 0.5) / Double(n)
                guard abs(cu - 0.5) <= halfVisible else { continue }
                let cell = gy * n + gx
                var radiance = 0.0
                for d in 0..<3 { radiance += canvas.meanLuminance[d][cell] * lights[d] }
                var skin = 0.0
                if !faces.isEmpty {
                    (radiance, skin) = faceRadiance(faces, canvas: canvas, cell: (gx, gy), behind: radiance, light: lights[2],
                                                    metered: metered?.id)
                }
                let w: Double
                if metered != nil {
                    w = 0.15 + 4 * skin
                } else {
                    let d2 = (cu - pu) * (cu - pu) + (cv - pv) * (cv - pv)
                    w = 0.15 + exp(-d2 / (2 * sigma * sigma))
                }
                sum += w * pow(radiance, 1 / 2.2)
                weights += w
            }
        }
        return weights > 0 ? pow(sum / weights, 2.2) : 0
    }

    /// A grid cell's metered radiance with the faces over it, and how much of it is the skin of
    /// face `metered`: 4×4 samples, each the face's own (near, lit by `light`) where one covers
    /// it, else `behind` (the room's mean for the cell).
    static func faceRadiance(_ faces: [PlacedFace], canvas: SyntheticCanvas, cell: (x: Int, y: Int), behind: Double,
                             light: Double, metered: Int?) -> (radiance: Double, skin: Double) {
        let n = Double(SyntheticCanvas.gridSize), w = Double(canvas.width), h = Double(canvas.height)
        let unit = min(w, h)
        var sum = 0.0, skin = 0, covered = false
        for sy in 0..<4 {
            let v = (Double(cell.y) + (Double(sy) + 0.5) / 4) / n
            for sx in 0..<4 {
                let u = (Double(cell.x) + (Double(sx) + 0.5) / 4) / n
                var sample = behind
                // The last face drawn is on top.
                for f in faces.reversed() {
                    let dx = (u - f.u) * w / unit, dy = (v - f.v) * h / unit
                    if let l = f.luminance(dx: dx, dy: dy) {
                        sample = l * light
                        covered = true
                        if f.id == metered && f.isSkin(dx: dx, dy: dy) { skin += 1 }
                        break
                    }
                }
                sum += sample
            }
        }
        return (covered ? sum / 16 : behind, Double(skin) / 16)
    }

    /// Three tables per depth class (B, G, R; 256 entries each): gamma-encoded albedo → output
    /// value, with light, exposure, white balance and the tone curve folded in; each entry is
    /// already shifted to its byte of a BGRA pixel (alpha set in the R table), so a pixel is
    /// three lookups OR-ed together.
    func toneTables(device: CaptureDevice, canvas: SyntheticCanvas, controls: CameraControlState,
                    rotation: VideoRotation, frameNumber: UInt64) -> [UInt32] {
        let (iso, duration) = exposure(device: device, canvas: canvas, controls: controls, rotation: rotation,
                                       frameNumber: frameNumber)
        let wbRange = device.capabilities.ranges[.whiteBalanceTemperature]
        let setting = wbRange?.clamp(whiteBalanceTemperature(controls: controls)) ?? illuminantTemperature
        let gains = SensorModel.whiteBalanceGains(light: illuminantTemperature, setting: setting)
        let channelGains = [gains.b, gains.g, gains.r]
        let exposure = iso * duration * SensorModel.sensitivity
        let lin = ToneModel.linearTable
        var table = [UInt32](repeating: 0, count: 3 * 3 * 256)
        for (d, light) in lights(device: device, controls: controls).enumerated() {
            for c in 0..<3 {
                let k = light * exposure * channelGains[c]
                let extra: UInt32 = c == 2 ? 0xFF00_0000 : 0
                for v in 0..<256 { table[(d * 3 + c) * 256 + v] = UInt32(ToneModel.encode(lin[v] * k)) << (8 * c) | extra }
            }
        }
        return table
    }

    /// Blur radius in pixels for the focus setting on a picture whose shorter side is `side`.
    static func blurRadius(controls: CameraControlState, side: Int) -> Int {
        guard controls.focusMode == .locked else { return 0 }
        let position = controls.focusPosition.isFinite ? min(max(controls.focusPosition, 0), 1) : 1
        return Int((abs(position - SensorModel.subjectLensPosition) * Double(side) / 24).rounded())
    }
}

/// Renders frames, reusing its buffers between calls. One thread at a time (a stream's pacing
/// thread, or a single `SyntheticScene.render` call).
final class SyntheticRenderer: @unchecked Sendable {
    // @unchecked: used by one thread at a time — a stream's pacing threads never overlap (the old
    // one is joined before a new one starts) and photos use a renderer of their own.
    private var pools: [String: VideoBufferPool] = [:]
    private var cumsum: [Int32] = []

    private func pool(_ format: PixelFormat, _ w: Int, _ h: Int, capacity: Int = 2) -> VideoBufferPool {
        let key = "\(format.rawValue) \(w)x\(h)"
        if let p = pools[key] { return p }
        if pools.count > 12 { pools.removeAll() }   // sizes changed a lot: start over
        let p = VideoBufferPool(format: format, width: w, height: h, capacity: capacity)
        pools[key] = p
        return p
    }

    func render(scene: SyntheticScene, device: CaptureDevice, width: Int, height: Int, format: PixelFormat,
                controls: CameraControlState, rotation: VideoRotation, timestampNs: Int64, frameNumber: UInt64) -> VideoFrame {
        let w = VideoFrameBuffer.clampedDimension(width, minimum: 2), h = VideoFrameBuffer.clampedDimension(height, minimum: 2)
        let (cw, ch) = SyntheticScene.uprightSize(width: w, height: h, rotation: rotation)
        let canvas = SyntheticCanvas.shared(position: device.position, width: cw, height: ch)
        let zoomRange = device.capabilities.ranges[.zoom]
        let zoom = zoomRange?.clamp(controls.zoom) ?? 1

        let tables = scene.toneTables(device: device, canvas: canvas, controls: controls, rotation: rotation,
                                      frameNumber: frameNumber)
        let faces = scene.placedFaces(device: device, frameNumber: frameNumber)
        let radius = min(SyntheticScene.blurRadius(controls: controls, side: min(cw, ch)), cw / 2 - 1, ch - 1)
        var work = pool(.bgra, cw, ch).get()
        let src = canvas.picture
        if zoom <= 1.0001 && radius <= 0 {
            // Common case, one pass: the sensor model straight from the scene, then the ball
            // drawn in its exposed colour.
            Self.applyTables(tables, from: src, to: work)
            for f in faces { f.paint(into: work, zoom: 1) { Self.exposed($0, tables: tables) } }
            drawBall(into: work, frameNumber: frameNumber, zoom: 1, tables: tables)
        } else {
            // Optics first — zoom (crop the centre, scale back up), the moving ball, focus blur —
            // then the sensor model in place.
            if zoom > 1.0001 {
                let r = CameraGeometry.zoomCrop(width: cw, height: ch, zoom: zoom)
                _ = ARGBScale(src.planePointer(0) + r.y * src.strides[0] + 4 * r.x, Int32(src.strides[0]),
                              Int32(r.width), Int32(r.height),
                              work.planePointer(0), Int32(work.strides[0]), Int32(cw), Int32(ch), kFilterBilinear)
            } else {
                _ = ARGBCopy(src.planePointer(0), Int32(src.strides[0]), work.planePointer(0), Int32(work.strides[0]),
                             Int32(cw), Int32(ch))
            }
            for f in faces { f.paint(into: work, zoom: zoom) { $0 } }
            drawBall(into: work, frameNumber: frameNumber, zoom: zoom, tables: nil)
            if radius > 0 {
                let blurred = pool(.bgra, cw, ch).get()
                let stride32 = cw * 4
                let needed = stride32 * (2 * radius + 3)   // libyuv keeps 2·radius+2 rows, circularly
                if cumsum.count < needed { cumsum = [Int32](repeating: 0, count: needed) }
                cumsum.withUnsafeMutableBufferPointer { cs in
                    guard let base = cs.baseAddress else { return }
                    _ = ARGBBlur(work.planePointer(0), Int32(work.strides[0]), blurred.planePointer(0), Int32(blurred.strides[0]),
                                 base, Int32(stride32), Int32(cw), Int32(ch), Int32(radius))
                }
                work = blurred
            }
            Self.applyTables(tables, from: work, to: work)
        }

        // Delivery: turned into sensor orientation, in the asked format.
        let out = pool(format, w, h, capacity: 8).get()
        let inverse = VideoRotation(rawValue: (360 - rotation.rawValue) % 360) ?? .r0
        let mode = RotationMode(rawValue: UInt32(inverse.rawValue))
        let wp = work.planePointer(0), ws = Int32(work.strides[0])
        let o0 = out.planePointer(0), os0 = Int32(out.strides[0])
        switch format {
        case .bgra:
            if inverse == .r0 {
                _ = ARGBCopy(wp, ws, o0, os0, Int32(w), Int32(h))
            } else {
                _ = ARGBRotate(wp, ws, o0, os0, Int32(cw), Int32(ch), mode)
            }
        case .i420:
            if inverse == .r0 {
                _ = ARGBToI420(wp, ws, o0, os0, out.planePointer(1), Int32(out.strides[1]),
                               out.planePointer(2), Int32(out.strides[2]), Int32(w), Int32(h))
            } else {
                let upright = pool(.i420, cw, ch).get()
                _ = ARGBToI420(wp, ws, upright.planePointer(0), Int32(upright.strides[0]), upright.planePointer(1),
                               Int32(upright.strides[1]), upright.planePointer(2), Int32(upright.strides[2]), Int32(cw), Int32(ch))
                _ = I420Rotate(upright.planePointer(0), Int32(upright.strides[0]), upright.planePointer(1), Int32(upright.strides[1]),
                               upright.planePointer(2), Int32(upright.strides[2]),
                               o0, os0, out.planePointer(1), Int32(out.strides[1]), out.planePointer(2), Int32(out.strides[2]),
                               Int32(cw), Int32(ch), mode)
            }
        case .nv12VideoRange, .nv12FullRange:
            var argb = work
            if inverse != .r0 {
                argb = pool(.bgra, w, h).get()
                _ = ARGBRotate(wp, ws, argb.planePointer(0), Int32(argb.strides[0]), Int32(cw), Int32(ch), mode)
            }
            if format == .nv12VideoRange {
                _ = ARGBToNV12(argb.planePointer(0), Int32(argb.strides[0]), o0, os0, out.planePointer(1), Int32(out.strides[1]),
                               Int32(w), Int32(h))
            } else {
                let converted = argb.converted(to: .nv12FullRange)
                return VideoFrame(buffer: converted, rotation: .r0, timestampNs: timestampNs)
            }
        }
        return VideoFrame(buffer: out, rotation: .r0, timestampNs: timestampNs)
    }

    /// dst = table[depth][channel][src] for every pixel (src may be dst); alpha (the depth)
    /// becomes opaque. `tables` are `SyntheticScene.toneTables`: B, G, R per depth class.
    static func applyTables(_ tables: [UInt32], from src: VideoFrameBuffer, to dst: VideoFrameBuffer) {
        let w = min(src.width, dst.width), h = min(src.height, dst.height)
        let sBase = src.baseAddress + src.offsets[0], sStride = src.strides[0]
        let dBase = dst.baseAddress + dst.offsets[0], dStride = dst.strides[0]
        tables.withUnsafeBufferPointer { tp in
            depthOffsets.withUnsafeBufferPointer { dp in
                guard let t = tp.baseAddress, let d = dp.baseAddress, tp.count == 3 * 768 else { return }
                for row in 0..<h {
                    let s = (sBase + row * sStride).assumingMemoryBound(to: UInt32.self)
                    let o = (dBase + row * dStride).assumingMemoryBound(to: UInt32.self)
                    for x in 0..<w {
                        let px = s[x]
                        let base = t + d[Int(px >> 24)]
                        o[x] = base[Int(px & 0xFF)] | base[256 + Int((px >> 8) & 0xFF)] | base[512 + Int((px >> 16) & 0xFF)]
                    }
                }
            }
        }
    }

    /// Alpha (depth) → offset of that depth class's tables.
    private static let depthOffsets: [Int] = (0..<256).map { SyntheticCanvas.Depth.index(ofAlpha: UInt8($0)) * 768 }

    /// A pixel's colour as the sensor model renders it.
    static func exposed(_ albedo: UInt32, tables: [UInt32]) -> UInt32 {
        let base = depthOffsets[Int(albedo >> 24)]
        return tables[base + Int(albedo & 0xFF)] | tables[base + 256 + Int((albedo >> 8) & 0xFF)]
            | tables[base + 512 + Int((albedo >> 16) & 0xFF)]
    }

    /// A yellow ball (near the camera) circling above the subject once every 90 frames, in the
    /// zoomed picture's coordinates.
    /// `tables` given: the picture is already exposed, draw the ball's exposed colour.
    private func drawBall(into buffer: VideoFrameBuffer, frameNumber: UInt64, zoom: Double, tables: [UInt32]?) {
        let w = Double(buffer.width), h = Double(buffer.height)
        let phase = Double(frameNumber % 90) / 90 * 2 * Double.pi
        let u = 0.5 + 0.12 * cos(phase), v = 0.20 + 0.04 * sin(phase)
        let cx = (0.5 + (u - 0.5) * zoom) * w, cy = (0.5 + (v - 0.5) * zoom) * h
        let r = 0.035 * min(w, h) * zoom
        let y0 = max(0, Int(cy - r)), y1 = min(buffer.height - 1, Int(cy + r) + 1)
        guard y0 <= y1, r > 0 else { return }
        let base = buffer.planePointer(0), stride = buffer.strides[0]
        let albedo: UInt32 = (UInt32(SyntheticCanvas.Depth.near.rawValue) << 24) | (240 << 16) | (210 << 8) | 40
        let colour = tables.map { Self.exposed(albedo, tables: $0) } ?? albedo
        for y in y0...y1 {
            let dy = Double(y) + 0.5 - cy
            guard dy * dy <= r * r else { continue }
            let half = (r * r - dy * dy).squareRoot()
            let x0 = max(0, Int((cx - half).rounded())), x1 = min(buffer.width, Int((cx + half).rounded()))
            guard x1 > x0 else { continue }
            let row = UnsafeMutableRawPointer(base + y * stride).assumingMemoryBound(to: UInt32.self)
            for x in x0..<x1 { row[x] = colour }
        }
    }
}
