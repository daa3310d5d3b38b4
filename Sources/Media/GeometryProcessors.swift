import Locks

/// Flips every frame left to right (a front camera's selfie view).
public final class MirrorProcessor: VideoProcessor {
    public init() {}

    public func process(_ frame: VideoFrame) -> VideoFrame? {
        VideoFrame(buffer: frame.buffer.mirrored(), rotation: frame.rotation, timestampNs: frame.timestampNs,
                   faces: frame.facesAfterBufferMirror())
    }
}

/// Digital zoom: crops a window `1/zoom` of the picture's size around `center` and scales it back
/// to the input size (libyuv box filter, one pass). Zoom and center can change while frames flow.
public final class CropZoomProcessor: VideoProcessor {
    /// A point in the picture as fractions of its width and height (0…1; 0.5, 0.5 is the middle).
    public struct Point: Sendable, Hashable {
        public var x: Double
        public var y: Double
        public init(x: Double, y: Double) {
            self.x = x
            self.y = y
        }
        public static let center = Point(x: 0.5, y: 0.5)
    }

    private struct Settings {
        var zoom: Double
        var center: Point
    }

    private let settings: Locked<Settings>

    /// Highest zoom accepted (beyond that a window would be a few pixels wide).
    public static let maxZoom = 16.0

    public init(zoom: Double = 1, center: Point = .center) {
        settings = Locked(Settings(zoom: Self.cleanZoom(zoom), center: Self.cleanCenter(center)))
    }

    /// 1 shows the whole picture; 2 shows the middle half of each side, and so on.
    public var zoom: Double {
        get { settings.withLock { $0.zoom } }
        set { let z = Self.cleanZoom(newValue); settings.withLock { $0.zoom = z } }
    }

    public var center: Point {
        get { settings.withLock { $0.center } }
        set { let c = Self.cleanCenter(newValue); settings.withLock { $0.center = c } }
    }

    static func cleanZoom(_ z: Double) -> Double { z.isFinite ? min(max(z, 1), maxZoom) : 1 }
    static func cleanCenter(_ c: Point) -> Point {
        Point(x: c.x.isFinite ? min(max(c.x, 0), 1) : 0.5, y: c.y.isFinite ? min(max(c.y, 0), 1) : 0.5)
    }

    /// The window a frame of `width`×`height` is cropped to (even origin, kept inside the picture).
    public func cropRect(width: Int, height: Int) -> PixelRect {
        let s = settings.withLock { $0 }
        let cw = max(2, Int((Double(width) / s.zoom).rounded()) & ~1)
        let ch = max(2, Int((Double(height) / s.zoom).rounded()) & ~1)
        let x = min(max(Int((s.center.x * Double(width)).rounded()) - cw / 2, 0), max(width - cw, 0))
        let y = min(max(Int((s.center.y * Double(height)).rounded()) - ch / 2, 0), max(height - ch, 0))
        return PixelRect(x: x & ~1, y: y & ~1, width: min(cw, width), height: min(ch, height))
    }

    public func process(_ frame: VideoFrame) -> VideoFrame? {
        if zoom <= 1 { return frame }
        let rect = cropRect(width: frame.width, height: frame.height)
        let buffer = frame.buffer.cropAndScale(rect, toWidth: frame.width, toHeight: frame.height)
        return VideoFrame(buffer: buffer, rotation: frame.rotation, timestampNs: frame.timestampNs,
                          faces: frame.facesAfterBufferCrop(rect))
    }
}
