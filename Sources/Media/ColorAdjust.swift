import CYUV
import Locks

/// Brightness, contrast and saturation, as lookup tables: luma through one table, chroma scaled
/// around its neutral value 128 through another. All three can be changed while frames flow.
///
/// - brightness −1…1 (0 = unchanged) shifts luma by up to ±128 levels;
/// - contrast 0…4 (1 = unchanged) stretches luma around mid-grey 128;
/// - saturation 0…4 (1 = unchanged; 0 = grey) scales U and V around 128.
///
/// I420 and NV12 keep their format; BGRA is converted to I420 first.
public final class ColorAdjust: VideoProcessor {
    private struct Settings {
        var brightness: Double
        var contrast: Double
        var saturation: Double
        var luma: [UInt8]
        var chroma: [UInt8]
    }

    private let settings: Locked<Settings>

    public init(brightness: Double = 0, contrast: Double = 1, saturation: Double = 1) {
        settings = Locked(Self.make(brightness, contrast, saturation))
    }

    public var brightness: Double {
        get { settings.withLock { $0.brightness } }
        set { update { $0.brightness = newValue } }
    }
    public var contrast: Double {
        get { settings.withLock { $0.contrast } }
        set { update { $0.contrast = newValue } }
    }
    public var saturation: Double {
        get { settings.withLock { $0.saturation } }
        set { update { $0.saturation = newValue } }
    }

    private func update(_ change: (inout (brightness: Double, contrast: Double, saturation: Double)) -> Void) {
        settings.withLock { s in
            var p = (brightness: s.brightness, contrast: s.contrast, saturation: s.saturation)
            change(&p)
            s = Self.make(p.brightness, p.contrast, p.saturation)
        }
    }

    private static func clean(_ v: Double, _ lo: Double, _ hi: Double, default d: Double) -> Double {
        v.isFinite ? min(max(v, lo), hi) : d
    }

    private static func make(_ brightness: Double, _ contrast: Double, _ saturation: Double) -> Settings {
        let b = clean(brightness, -1, 1, default: 0)
        let c = clean(contrast, 0, 4, default: 1)
        let s = clean(saturation, 0, 4, default: 1)
        let luma = (0..<256).map { v in UInt8(clamping: Int(((Double(v) - 128) * c + 128 + b * 128).rounded())) }
        let chroma = (0..<256).map { v in UInt8(clamping: Int(((Double(v) - 128) * s + 128).rounded())) }
        return Settings(brightness: b, contrast: c, saturation: s, luma: luma, chroma: chroma)
    }

    public func process(_ frame: VideoFrame) -> VideoFrame? {
        let (luma, chroma, keepsChroma, identity) = settings.withLock {
            ($0.luma, $0.chroma, $0.saturation == 1, $0.brightness == 0 && $0.contrast == 1 && $0.saturation == 1)
        }
        if identity { return frame }
        let src = frame.buffer.format == .bgra ? frame.buffer.converted(to: .i420) : frame.buffer
        let dst = outputBuffer(src.format, src.width, src.height, pool: nil)
        mapPlane(src.pl(0), src.strides[0], dst.pl(0), dst.strides[0], width: src.width, height: src.height, lut: luma)
        let cw = src.chromaWidth, ch = src.chromaHeight
        // I420: U and V planes; NV12: one interleaved UV plane (the same table fits both samples).
        let chromaPlanes = src.format == .i420 ? 1...2 : 1...1
        let width = src.format == .i420 ? cw : 2 * cw
        for i in chromaPlanes {
            if keepsChroma {
                CopyPlane(src.pl(i), src.st(i), dst.pl(i), dst.st(i), i32(width), i32(ch))
            } else {
                mapPlane(src.pl(i), src.strides[i], dst.pl(i), dst.strides[i], width: width, height: ch, lut: chroma)
            }
        }
        var out = frame
        out.buffer = dst
        return out
    }
}
