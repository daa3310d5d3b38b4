import Media

/// How the phone (or device) is held, as UIDeviceOrientation names it.
public enum DeviceOrientation: String, Sendable, Hashable, CaseIterable, Codable {
    case portrait, portraitUpsideDown, landscapeLeft, landscapeRight, faceUp, faceDown, unknown

    /// The rotation a receiver applies to show this camera's frames upright, from the
    /// reference app's table: portrait 90°, upside down 270°, landscape left 180° on the front
    /// camera and 0° on the back, landscape right the other way round. Face up, face down and
    /// unknown say nothing about "up": nil, and the last rotation stays.
    public func frameRotation(for position: CameraPosition) -> VideoRotation? {
        let front = position == .front
        switch self {
        case .portrait: return .r90
        case .portraitUpsideDown: return .r270
        case .landscapeLeft: return front ? .r180 : .r0
        case .landscapeRight: return front ? .r0 : .r180
        case .faceUp, .faceDown, .unknown: return nil
        }
    }
}

/// Geometry the reference app computes by hand, as pure functions.
public enum CameraGeometry {
    /// A tap at `point` in a portrait preview of `previewWidth`×`previewHeight` points, as the
    /// sensor point of interest (landscape sensor coordinates): x comes from the preview's y, and
    /// y from the preview's x — flipped for the back camera, not for the front one, whose
    /// preview is mirrored. Clamped to 0...1.
    public static func pointOfInterest(previewX: Double, previewY: Double, previewWidth: Double, previewHeight: Double,
                                       position: CameraPosition) -> NormalizedPoint {
        guard previewWidth > 0, previewHeight > 0 else { return .center }
        let x = previewY / previewHeight
        let y = position == .front ? previewX / previewWidth : 1 - previewX / previewWidth
        return NormalizedPoint(x: x, y: y).clamped
    }

    /// A rectangle with x, y, width, height in points or pixels.
    public struct Rect: Sendable, Hashable, CustomStringConvertible {
        public var x: Double, y: Double, width: Double, height: Double
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }
        public var description: String { "(\(fmt(x)), \(fmt(y)), \(fmt(width))x\(fmt(height)))" }
    }

    /// Where a `videoWidth`×`videoHeight` picture lands when drawn centred on `rect`: scaled to
    /// cover it (`scaleToFit` false — aspect fill, parts fall outside) or to fit inside it
    /// (`scaleToFit` true — aspect fit, bars at two sides). The reference app's
    /// `getZoomedRectWithRect:scaleToFit:`.
    public static func zoomedRect(videoWidth: Double, videoHeight: Double, in rect: Rect, scaleToFit: Bool) -> Rect {
        guard videoWidth > 0, videoHeight > 0, rect.width > 0, rect.height > 0 else { return rect }
        let sx = videoWidth / rect.width, sy = videoHeight / rect.height
        let scale = scaleToFit ? max(sx, sy) : min(sx, sy)
        let w = videoWidth / scale, h = videoHeight / scale
        return Rect(x: rect.x - (w - rect.width) / 2, y: rect.y - (h - rect.height) / 2, width: w, height: h)
    }

    /// The part of a `width`×`height` sensor picture a zoom factor keeps: centred, 1/zoom of each
    /// side, even-aligned so chroma crops at the same place.
    public static func zoomCrop(width: Int, height: Int, zoom: Double) -> PixelRect {
        let z = zoom.isFinite ? max(zoom, 1) : 1
        let w = max(2, Int((Double(width) / z).rounded()) & ~1)
        let h = max(2, Int((Double(height) / z).rounded()) & ~1)
        return PixelRect(x: ((width - w) / 2) & ~1, y: ((height - h) / 2) & ~1, width: min(w, width), height: min(h, height))
    }
}
