/// A rectangle in a picture, each coordinate a fraction of the picture's width or height (0…1,
/// origin at the top left), the way `AVMetadataObject.bounds` are given.
public struct NormalizedRect: Sendable, Hashable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var midX: Double { x + width / 2 }
    public var midY: Double { y + height / 2 }
    public var maxX: Double { x + width }
    public var maxY: Double { y + height }
    /// 0 for an empty or inverted rectangle.
    public var area: Double { max(width, 0) * max(height, 0) }

    /// The part inside the picture; zero width or height when none is.
    public var clipped: NormalizedRect {
        let x0 = min(max(x, 0), 1), y0 = min(max(y, 0), 1)
        let x1 = min(max(maxX, 0), 1), y1 = min(max(maxY, 0), 1)
        return NormalizedRect(x: x0, y: y0, width: max(x1 - x0, 0), height: max(y1 - y0, 0))
    }

    /// Intersection over union (0 when they do not overlap or either is empty).
    public func iou(_ other: NormalizedRect) -> Double {
        let w = min(maxX, other.maxX) - max(x, other.x), h = min(maxY, other.maxY) - max(y, other.y)
        guard w > 0, h > 0 else { return 0 }
        let inter = w * h
        let union = area + other.area - inter
        return union > 0 ? inter / union : 0
    }

    /// The same region once the picture is turned clockwise by `rotation`.
    public func rotated(_ rotation: VideoRotation) -> NormalizedRect {
        switch rotation {
        case .r0: return self
        case .r90: return NormalizedRect(x: 1 - maxY, y: x, width: height, height: width)
        case .r180: return NormalizedRect(x: 1 - maxX, y: 1 - maxY, width: width, height: height)
        case .r270: return NormalizedRect(x: y, y: 1 - maxX, width: height, height: width)
        }
    }

    /// The same region once the picture is flipped left to right.
    public var mirrored: NormalizedRect { NormalizedRect(x: 1 - maxX, y: y, width: width, height: height) }

    /// In pixels of a `width`×`height` picture: rounded outwards (past floating-point noise),
    /// kept inside it.
    public func pixelRect(width w: Int, height h: Int) -> PixelRect {
        let c = clipped, e = 1e-9
        let x0 = Int((c.x * Double(w) + e).rounded(.down)), y0 = Int((c.y * Double(h) + e).rounded(.down))
        let x1 = min(w, Int((c.maxX * Double(w) - e).rounded(.up))), y1 = min(h, Int((c.maxY * Double(h) - e).rounded(.up)))
        return PixelRect(x: x0, y: y0, width: max(x1 - x0, 0), height: max(y1 - y0, 0))
    }

    public var description: String {
        func f(_ v: Double) -> String { String(Double(Int((v * 1000).rounded())) / 1000) }
        return "(\(f(x)), \(f(y)) \(f(width))x\(f(height)))"
    }
}

extension VideoRotation {
    /// The rotation that undoes this one.
    public var inverse: VideoRotation { VideoRotation(rawValue: (360 - rawValue) % 360) ?? .r0 }
}

/// One face in a frame, with what `AVMetadataFaceObject` gives.
public struct Face: Sendable, Hashable, CustomStringConvertible {
    /// Stays the same while the face stays in view; a face that leaves and comes back gets a new one.
    public var id: Int
    /// Where it is in the upright picture: the frame's buffer turned by the frame's `rotation`
    /// (mirrored as the buffer is).
    public var bounds: NormalizedRect
    /// Head tilt in degrees, clockwise as the upright picture shows it; nil when the detector
    /// cannot tell.
    public var rollAngle: Double?
    /// Head turn in degrees, positive when the face turns towards the upright picture's right
    /// (0 faces the camera, ±90 is a profile); nil when the detector cannot tell.
    public var yawAngle: Double?

    public init(id: Int, bounds: NormalizedRect, rollAngle: Double? = nil, yawAngle: Double? = nil) {
        self.id = id
        self.bounds = bounds
        self.rollAngle = rollAngle
        self.yawAngle = yawAngle
    }

    /// The same face once its picture is flipped left to right (angles change sign).
    public var mirrored: Face {
        Face(id: id, bounds: bounds.mirrored, rollAngle: rollAngle.map { -$0 }, yawAngle: yawAngle.map { -$0 })
    }

    public var description: String {
        var s = "face \(id) at \(bounds)"
        if let r = rollAngle { s += " roll \(Int(r.rounded()))°" }
        if let y = yawAngle { s += " yaw \(Int(y.rounded()))°" }
        return s
    }
}

extension VideoFrame {
    /// Where `face` is in this frame's buffer, in pixels (processors work on the buffer, which
    /// shows upright only once turned by `rotation`).
    public func bufferRect(of face: Face) -> PixelRect {
        face.bounds.rotated(rotation.inverse).pixelRect(width: width, height: height)
    }

    /// The faces after the buffer was flipped left to right (as `MirrorProcessor` does): at 90° or
    /// 270° that turns the upright picture upside down, so roll goes to 180° − roll.
    func facesAfterBufferMirror() -> [Face]? {
        faces?.map { f in
            var m = f
            m.bounds = f.bounds.rotated(rotation.inverse).mirrored.rotated(rotation)
            m.rollAngle = f.rollAngle.map { r in rotation.swapsDimensions ? (r > 0 ? 180 - r : -180 - r) : -r }
            m.yawAngle = f.yawAngle.map { -$0 }
            return m
        }
    }

    /// The faces after the buffer was cropped to `rect` and scaled back up; faces left wholly
    /// outside are dropped.
    func facesAfterBufferCrop(_ rect: PixelRect) -> [Face]? {
        guard rect.width > 0, rect.height > 0 else { return faces }
        let w = Double(width), h = Double(height)
        return faces?.compactMap { f in
            let b = f.bounds.rotated(rotation.inverse)
            let cropped = NormalizedRect(x: (b.x * w - Double(rect.x)) / Double(rect.width),
                                         y: (b.y * h - Double(rect.y)) / Double(rect.height),
                                         width: b.width * w / Double(rect.width), height: b.height * h / Double(rect.height)).clipped
            guard cropped.area > 0 else { return nil }
            var out = f
            out.bounds = cropped.rotated(rotation)
            return out
        }
    }
}
