import Foundation
import Media

extension SyntheticScene {
    /// A face the front camera sees, scripted by frame number: when it is there, where it moves,
    /// how it turns and what it looks like. Faces are drawn per frame over the room (near the
    /// camera, so the torch lights them most), and the camera reports each one it draws as its
    /// face metadata (`SyntheticScene.faces(…)`), with `id` as the source's tracking id.
    public struct Face: Sendable, Hashable {
        public var id: Int
        /// The face is there from frame `enter` until just before `leave` (nil: stays).
        public var enter: UInt64
        public var leave: UInt64?
        /// The visit repeats every `period` frames (nil: once).
        public var period: UInt64?
        /// Centre of the face in the upright picture (0…1) at `enter` and at `leave`, moving
        /// evenly in between.
        public var fromU: Double, fromV: Double
        public var toU: Double, toV: Double
        /// Face height in units of the picture's shorter side.
        public var size: Double
        /// Roll and yaw in degrees (`Face.rollAngle`, `Face.yawAngle`) at `enter` and at `leave`.
        public var rollFrom: Double, rollTo: Double
        public var yawFrom: Double, yawTo: Double
        /// Skin albedo (gamma-encoded R, G, B).
        public var skin: [UInt8]
        /// Shoulders below the face (a person in front of the camera, not just a head).
        public var shoulders: Bool

        public init(id: Int, enter: UInt64 = 0, leave: UInt64? = nil, period: UInt64? = nil,
                    from: (u: Double, v: Double), to: (u: Double, v: Double)? = nil, size: Double,
                    roll: (from: Double, to: Double) = (0, 0), yaw: (from: Double, to: Double) = (0, 0),
                    skin: [UInt8] = [226, 172, 140], shoulders: Bool = false) {
            self.id = id
            self.enter = enter
            self.leave = leave
            self.period = period
            (fromU, fromV) = from
            (toU, toV) = to ?? from
            self.size = size
            (rollFrom, rollTo) = roll
            (yawFrom, yawTo) = yaw
            self.skin = skin
            self.shoulders = shoulders
        }

        /// The person in the middle of the front camera's picture, always there (the face whose
        /// widest row is the picture's centre row).
        public static let subject = Face(id: 1, from: (0.5, 0.5), size: 0.46, shoulders: true)

        /// Someone who steps in at the right every 5 s (150 frames) from frame 45, walks a little
        /// towards the middle while tilting and turning their head, and steps out after 3 s.
        public static let visitor = Face(id: 2, enter: 45, leave: 135, period: 150, from: (0.86, 0.40), to: (0.74, 0.36),
                                         size: 0.30, roll: (-15, 20), yaw: (35, -30), skin: [150, 104, 80])

        /// Where and how the face is at `frame`, nil when it is not there.
        func placed(at frame: UInt64) -> PlacedFace? {
            var f = frame
            if let period, period > 0 { f %= period }
            guard f >= enter, leave.map({ f < $0 }) ?? true else { return nil }
            let span = leave.map { Double(max($0 - enter, 2) - 1) } ?? 1
            let t = leave == nil ? 0 : min(Double(f - enter) / span, 1)
            func mix(_ a: Double, _ b: Double) -> Double { a + (b - a) * t }
            return PlacedFace(id: id, u: mix(fromU, toU), v: mix(fromV, toV), size: max(size, 0.01),
                              roll: mix(rollFrom, rollTo), yaw: mix(yawFrom, yawTo),
                              skin: Self.albedo(skin), shoulders: shoulders)
        }

        static func albedo(_ rgb: [UInt8]) -> CanvasPainter.RGB {
            rgb.count == 3 ? (Double(rgb[0]), Double(rgb[1]), Double(rgb[2])) : (226, 172, 140)
        }
    }

    /// The faces the front camera reports at `frameNumber`: every face with some of its skin in
    /// the (zoomed) picture, bounded by the part in view, in the upright picture (`orientation`
    /// turns the sensor; not mirrored). None on the back camera.
    public func faces(device: CaptureDevice, width: Int, height: Int, controls: CameraControlState,
                      orientation: DeviceOrientation = .unknown, frameNumber: UInt64) -> [FaceObservation] {
        let rotation = orientation.frameRotation(for: device.position) ?? .r0
        let (cw, ch) = Self.uprightSize(width: VideoFrameBuffer.clampedDimension(width, minimum: 2),
                                        height: VideoFrameBuffer.clampedDimension(height, minimum: 2), rotation: rotation)
        return observations(device: device, width: cw, height: ch, controls: controls, frameNumber: frameNumber)
    }

    /// `faces(…)` for an upright picture of `width`×`height`.
    func observations(device: CaptureDevice, width: Int, height: Int, controls: CameraControlState,
                      frameNumber: UInt64) -> [FaceObservation] {
        let zoom = device.capabilities.ranges[.zoom]?.clamp(controls.zoom) ?? 1
        return placedFaces(device: device, frameNumber: frameNumber).compactMap { p in
            guard let visible = p.visibleBounds(width: width, height: height, zoom: zoom) else { return nil }
            return FaceObservation(trackingID: p.id, bounds: visible, rollAngle: p.roll, yawAngle: p.yaw)
        }
    }

    /// The faces drawn at `frameNumber` (front camera only: the back camera looks at a landscape).
    func placedFaces(device: CaptureDevice, frameNumber: UInt64) -> [PlacedFace] {
        guard device.position != .back else { return [] }
        return faces.compactMap { $0.placed(at: frameNumber) }
    }
}

/// One face at one frame: its geometry in the upright picture and its surface colours.
struct PlacedFace {
    let id: Int
    let u: Double, v: Double
    let size: Double
    let roll: Double, yaw: Double
    let skin: CanvasPainter.RGB
    let shoulders: Bool
    /// Worked out once, used for every pixel: the features' scale (the subject's is 1), the roll's
    /// cosine and sine, the skin ellipse's semi-axes (units of the shorter side; the subject's:
    /// 0.17 × 0.23) and how far the features slide sideways with the yaw.
    private let scale: Double, cosRoll: Double, sinRoll: Double
    let radii: (x: Double, y: Double)
    private let turn: Double

    init(id: Int, u: Double, v: Double, size: Double, roll: Double, yaw: Double, skin: CanvasPainter.RGB, shoulders: Bool) {
        self.id = id
        self.u = u
        self.v = v
        self.size = size
        self.roll = roll
        self.yaw = yaw
        self.skin = skin
        self.shoulders = shoulders
        scale = size / 0.46
        cosRoll = cos(roll * .pi / 180)
        sinRoll = sin(roll * .pi / 180)
        let ry = size / 2
        radii = (ry * 0.74 * (1 - 0.25 * abs(sin(yaw * .pi / 180))), ry)
        turn = sin(yaw * .pi / 180) * 0.35 * radii.x
    }

    static let hair: CanvasPainter.RGB = (62, 42, 30)
    static let shirt: CanvasPainter.RGB = (40, 52, 112)
    static let eyeWhite: CanvasPainter.RGB = (246, 246, 246)
    static let pupil: CanvasPainter.RGB = (30, 28, 40)
    static let lips: CanvasPainter.RGB = (172, 60, 70)

    /// The box of the part of the skin ellipse inside the upright picture (zoomed about its
    /// centre); nil when none of it is in view. The ellipse is taken as a 64-gon clipped to the
    /// picture.
    func visibleBounds(width: Int, height: Int, zoom: Double) -> NormalizedRect? {
        let w = Double(width), h = Double(height), unit = min(w, h) * zoom
        let r = radii, a = roll * .pi / 180
        let cx = (0.5 + (u - 0.5) * zoom) * w, cy = (0.5 + (v - 0.5) * zoom) * h
        var polygon: [(x: Double, y: Double)] = (0..<64).map { k in
            let t = Double(k) / 64 * 2 * .pi
            let lx = r.x * cos(t) * unit, ly = r.y * sin(t) * unit
            return ((cx + lx * cos(a) - ly * sin(a)) / w, (cy + lx * sin(a) + ly * cos(a)) / h)
        }
        // Sutherland–Hodgman against each side of the picture.
        let sides: [(inside: ((x: Double, y: Double)) -> Bool, cut: ((x: Double, y: Double), (x: Double, y: Double)) -> (x: Double, y: Double))] = [
            ({ $0.x >= 0 }, { p, q in (0, p.y + (q.y - p.y) * (0 - p.x) / (q.x - p.x)) }),
            ({ $0.x <= 1 }, { p, q in (1, p.y + (q.y - p.y) * (1 - p.x) / (q.x - p.x)) }),
            ({ $0.y >= 0 }, { p, q in (p.x + (q.x - p.x) * (0 - p.y) / (q.y - p.y), 0) }),
            ({ $0.y <= 1 }, { p, q in (p.x + (q.x - p.x) * (1 - p.y) / (q.y - p.y), 1) }),
        ]
        for side in sides {
            guard let last = polygon.last else { return nil }
            var out: [(x: Double, y: Double)] = []
            var prev = last
            for p in polygon {
                switch (side.inside(prev), side.inside(p)) {
                case (true, true): out.append(p)
                case (true, false): out.append(side.cut(prev, p))
                case (false, true): out.append(side.cut(prev, p)); out.append(p)
                case (false, false): break
                }
                prev = p
            }
            polygon = out
        }
        guard let x0 = polygon.map(\.x).min(), let x1 = polygon.map(\.x).max(),
              let y0 = polygon.map(\.y).min(), let y1 = polygon.map(\.y).max(), x1 > x0, y1 > y0 else { return nil }
        return NormalizedRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// Surface colour and texture at offset (dx, dy) from the face centre, in units of the shorter
    /// side, upright; nil where the face is not.
    func surface(dx: Double, dy: Double) -> (rgb: CanvasPainter.RGB, texture: Double)? {
        let s = scale
        if shoulders {
            let sx = dx / (0.34 * s), sy = (dy - 0.58 * s) / (0.27 * s)
            if sx * sx + sy * sy <= 1 { return (Self.shirt, 4) }
        }
        let (lx, ly) = local(dx: dx, dy: dy)
        let r = radii
        @inline(__always) func inside(_ cx: Double, _ cy: Double, _ rx: Double, _ ry: Double) -> Bool {
            let x = (lx - cx) / rx, y = (ly - cy) / ry
            return x * x + y * y <= 1
        }
        guard inside(0, -0.05 * s, r.x * 1.12, r.y * 1.09) else { return nil }
        guard inside(0, 0, r.x, r.y) else { return (Self.hair, 8) }
        if inside(turn, 0.12 * s, 0.06 * s, 0.018 * s) { return (Self.lips, 0) }
        // Eyes, left then right.
        let ey = -0.07 * s
        var ex = turn - 0.065 * s
        for _ in 0..<2 {
            if inside(ex, ey, 0.014 * s, 0.014 * s) { return (Self.pupil, 0) }
            if inside(ex, ey, 0.036 * s, 0.02 * s) { return (Self.eyeWhite, 0) }
            ex += 0.13 * s
        }
        return (skin, 6)
    }

    /// (dx, dy) in the face's own frame: the roll undone.
    @inline(__always) private func local(dx: Double, dy: Double) -> (Double, Double) {
        (dx * cosRoll + dy * sinRoll, -dx * sinRoll + dy * cosRoll)
    }

    /// Whether (dx, dy) from the centre (units of the shorter side) is on the skin ellipse.
    func isSkin(dx: Double, dy: Double) -> Bool {
        let (lx, ly) = local(dx: dx, dy: dy), r = radii
        return (lx / r.x) * (lx / r.x) + (ly / r.y) * (ly / r.y) <= 1
    }

    /// How far out from the centre anything of this face reaches, in units of the shorter side.
    var reach: (x: Double, up: Double, down: Double) {
        let s = scale, hair = max(radii.x * 1.12, radii.y * 1.09) + 0.05 * s
        return shoulders ? (max(hair, 0.34 * s), hair, 0.85 * s) : (hair, hair, hair)
    }

    /// Paints the face into an upright BGRA picture zoomed by `zoom` about its centre, each pixel
    /// through `colour` (albedo with the depth in alpha → what to store).
    func paint(into buffer: VideoFrameBuffer, zoom: Double, colour: (UInt32) -> UInt32) {
        let w = Double(buffer.width), h = Double(buffer.height)
        let unit = min(w, h) * zoom   // one unit of the unzoomed picture, in output pixels
        let cx = (0.5 + (u - 0.5) * zoom) * w, cy = (0.5 + (v - 0.5) * zoom) * h
        let reach = self.reach
        let x0 = max(0, Int(cx - reach.x * unit)), x1 = min(buffer.width, Int(cx + reach.x * unit) + 1)
        let y0 = max(0, Int(cy - reach.up * unit)), y1 = min(buffer.height, Int(cy + reach.down * unit) + 1)
        guard x1 > x0, y1 > y0, unit > 0 else { return }
        let base = buffer.planePointer(0), stride = buffer.strides[0]
        let near = UInt32(SyntheticCanvas.Depth.near.rawValue) << 24
        for y in y0..<y1 {
            let row = UnsafeMutableRawPointer(base + y * stride).assumingMemoryBound(to: UInt32.self)
            let dy = (Double(y) + 0.5 - cy) / unit
            for x in x0..<x1 {
                guard let s = surface(dx: (Double(x) + 0.5 - cx) / unit, dy: dy) else { continue }
                let t = s.texture == 0 ? 0 : s.texture * CanvasPainter.noise(x, y)
                func byte(_ v: Double) -> UInt32 { UInt32(UInt8(clamping: Int((v + t).rounded()))) }
                row[x] = colour(near | byte(s.rgb.r) << 16 | byte(s.rgb.g) << 8 | byte(s.rgb.b))
            }
        }
    }

    /// Linear luminance of the face at (dx, dy) (units of the shorter side), nil where it is not:
    /// what auto exposure meters.
    func luminance(dx: Double, dy: Double) -> Double? {
        guard let s = surface(dx: dx, dy: dy) else { return nil }
        let lin = ToneModel.linearTable
        func l(_ v: Double) -> Double { lin[Int(min(max(v.rounded(), 0), 255))] }
        return 0.0722 * l(s.rgb.b) + 0.7152 * l(s.rgb.g) + 0.2126 * l(s.rgb.r)
    }
}
