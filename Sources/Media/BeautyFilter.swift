import CYUV
import Locks

/// Skin smoothing for a camera picture: an edge-preserving filter on luma plus a mild brightness
/// lift, at `strength` 0 (off) … 1 (full).
///
/// The smoothing is a self-guided filter (He, Sun & Tang) run the "fast" way: its coefficients are
/// computed on a half-resolution copy of luma and then applied to the full-resolution pixels. In
/// every window the filter compares the local variance with ε: flat areas (skin, where variance is
/// only noise and fine texture) get pulled to the local mean, windows with real structure (eyes,
/// brows, hair, the face outline) have variance ≫ ε and keep their pixels. That ratio,
/// a = σ²/(σ²+ε), is the edge mask. Per pixel the output is I + w·(S − I) where w = strength·(1−ā)
/// is the smoothing weight and S the flat-weighted local mean (b̄ / (1−ā), a convex blend of
/// window means, so it never overshoots). w and S are upsampled from half resolution with
/// libyuv's bilinear scaler; the blend runs on full-resolution luma, so pixel-level noise goes
/// while edges stay sharp. Chroma is copied unchanged.
///
/// Output format: I420 and NV12 stay as they are; BGRA is converted to I420 first.
///
/// With `facesOnly` it works on the faces the frame carries (`VideoFrame.faces`, a fifth of each
/// box more on every side) and leaves the rest of the picture as it was.
public final class BeautyFilter: VideoProcessor {
    private final class Work {
        let low = ScratchBuffer<UInt8>()
        let colI = ScratchBuffer<UInt32>()
        let colII = ScratchBuffer<UInt32>()
        let prefixI = ScratchBuffer<UInt32>()
        let prefixII = ScratchBuffer<UInt32>()
        let coefA = ScratchBuffer<Float>()
        let coefB = ScratchBuffer<Float>()
        let colA = ScratchBuffer<Float>()
        let colB = ScratchBuffer<Float>()
        let prefixA = ScratchBuffer<Float>()
        let prefixB = ScratchBuffer<Float>()
        let invCols = ScratchBuffer<Float>()
        let weightLow = ScratchBuffer<UInt8>()
        let targetLow = ScratchBuffer<UInt8>()
        let weightFull = ScratchBuffer<UInt8>()
        let targetFull = ScratchBuffer<UInt8>()
    }

    private struct Settings {
        var strength: Double
        var facesOnly: Bool
    }

    private let settings: Locked<Settings>
    private let work = Locked(Work())

    /// Largest brightness lift, in luma levels, at mid-grey and strength 1.
    static let maxLift = 6.0

    public init(strength: Double = 0.5, facesOnly: Bool = false) {
        settings = Locked(Settings(strength: Self.clampStrength(strength), facesOnly: facesOnly))
    }

    /// 0 leaves frames untouched, 1 smooths the most. Can be changed while frames flow.
    public var strength: Double {
        get { settings.withLock { $0.strength } }
        set {
            let s = Self.clampStrength(newValue)
            settings.withLock { $0.strength = s }
        }
    }

    /// Only the faces the frame carries are smoothed (a frame without faces passes untouched).
    public var facesOnly: Bool {
        get { settings.withLock { $0.facesOnly } }
        set { settings.withLock { $0.facesOnly = newValue } }
    }

    static func clampStrength(_ s: Double) -> Double { s.isNaN ? 0 : min(max(s, 0), 1) }

    public func process(_ frame: VideoFrame) -> VideoFrame? {
        let (strength, facesOnly) = settings.withLock { ($0.strength, $0.facesOnly) }
        if strength <= 0 { return frame }
        var faceRects: [PixelRect] = []
        if facesOnly {
            faceRects = (frame.faces ?? []).map { f in
                let b = f.bounds, mx = b.width / 5, my = b.height / 5
                let grown = Face(id: f.id, bounds: NormalizedRect(x: b.x - mx, y: b.y - my, width: b.width + 2 * mx, height: b.height + 2 * my))
                return frame.bufferRect(of: grown)
            }
            if faceRects.isEmpty { return frame }
        }
        let src = frame.buffer.format == .bgra ? frame.buffer.converted(to: .i420) : frame.buffer
        let dst = outputBuffer(src.format, src.width, src.height, pool: nil)
        work.withLock { work in
            smoothLuma(src, into: dst, strength: strength, work: work)
        }
        if facesOnly { Self.restoreLuma(of: src, into: dst, outside: faceRects) }
        // Chroma unchanged.
        if src.format == .i420 {
            CopyPlane(src.pl(1), src.st(1), dst.pl(1), dst.st(1), i32(src.chromaWidth), i32(src.chromaHeight))
            CopyPlane(src.pl(2), src.st(2), dst.pl(2), dst.st(2), i32(src.chromaWidth), i32(src.chromaHeight))
        } else {
            CopyPlane(src.pl(1), src.st(1), dst.pl(1), dst.st(1), i32(2 * src.chromaWidth), i32(src.chromaHeight))
        }
        var out = frame
        out.buffer = dst
        return out
    }

    private func smoothLuma(_ src: VideoFrameBuffer, into dst: VideoFrameBuffer, strength: Double, work: Work) {
        let w = src.width, h = src.height
        let lw = (w + 1) / 2, lh = (h + 1) / 2
        // Window radius at half resolution: about 1/90 of the shorter side (8 px at 720p full res),
        // the same for landscape and portrait. ≤ 64 keeps every window's Σv² below 2³¹.
        let r = min(max(2, min(lw, lh) / 90), 64)
        // ε sets what counts as an edge: standard deviations below ~√ε are smoothed away.
        let sigma = 8.0 + 10.0 * strength
        let eps = Float(sigma * sigma)

        let low = work.low.reserve(lw * lh)
        ScalePlane(src.pl(0), src.st(0), i32(w), i32(h), low, i32(lw), i32(lw), i32(lh), kFilterBox)

        let invCols = work.invCols.reserve(lw)
        for x in 0..<lw {
            invCols[x] = 1 / Float(min(x + r, lw - 1) - max(x - r, 0) + 1)
        }
        let a = work.coefA.reserve(lw * lh), b = work.coefB.reserve(lw * lh)
        let padded = lw + 2 * r + 1
        guidedCoefficients(low, lw, lh, r, eps, a, b, invCols,
                           work.colI.reserve(lw), work.colII.reserve(lw),
                           work.prefixI.reserve(padded), work.prefixII.reserve(padded))

        let weightLow = work.weightLow.reserve(lw * lh), targetLow = work.targetLow.reserve(lw * lh)
        blendMaps(a, b, lw, lh, r, Float(strength), invCols, weightLow, targetLow,
                  work.colA.reserve(lw), work.colB.reserve(lw),
                  work.prefixA.reserve(padded), work.prefixB.reserve(padded))

        let weightFull = work.weightFull.reserve(w * h), targetFull = work.targetFull.reserve(w * h)
        ScalePlane(weightLow, i32(lw), i32(lw), i32(lh), weightFull, i32(w), i32(w), i32(h), kFilterBilinear)
        ScalePlane(targetLow, i32(lw), i32(lw), i32(lh), targetFull, i32(w), i32(w), i32(h), kFilterBilinear)

        // out = I + w·(S − I), then the lift v + L·v·(255−v)/255² in fixed point (arithmetic
        // rather than a table so the loop vectorizes).
        let liftQ24 = Int32((4 * Self.maxLift * strength / 65025 * 16_777_216).rounded())
        let srcY = src.pl(0), dstY = dst.pl(0), ss = src.strides[0], ds = dst.strides[0]
        for y in 0..<h {
            let sr = srcY + y * ss, dr = dstY + y * ds
            let wr = weightFull + y * w, tr = targetFull + y * w
            for x in 0..<w {
                let i = Int32(sr[x])
                let v = i &+ (((Int32(tr[x]) &- i) &* Int32(wr[x]) &+ 128) &>> 8)
                let lifted = v &+ ((v &* (255 &- v) &* liftQ24 &+ (1 << 23)) &>> 24)
                dr[x] = UInt8(truncatingIfNeeded: min(max(lifted, 0), 255))
            }
        }
    }

    /// Copies `src`'s luma back into `dst` everywhere but inside `rects`.
    private static func restoreLuma(of src: VideoFrameBuffer, into dst: VideoFrameBuffer, outside rects: [PixelRect]) {
        let w = src.width, srcY = src.pl(0), dstY = dst.pl(0), ss = src.strides[0], ds = dst.strides[0]
        for y in 0..<src.height {
            let sr = srcY + y * ss, dr = dstY + y * ds
            var x = 0
            for r in rects.filter({ y >= $0.y && y < $0.y + $0.height }).sorted(by: { $0.x < $1.x }) {
                if r.x > x { dr.advanced(by: x).update(from: sr.advanced(by: x), count: r.x - x) }
                x = max(x, r.x + r.width)
            }
            if x < w { dr.advanced(by: x).update(from: sr.advanced(by: x), count: w - x) }
        }
    }

    /// Box sums of one row through a padded prefix sum: `q[k]` is the sum of `col[0 ..< clamp(k − r)]`,
    /// so the window around x (clipped at the borders) is `q[x + 2r + 1] − q[x]` for every x.
    /// Integer sums wrap: a window's difference is exact as long as the window itself fits 32 bits.
    @inline(__always)
    private static func paddedPrefix(_ col: UnsafeMutablePointer<UInt32>, _ w: Int, _ r: Int, _ q: UnsafeMutablePointer<UInt32>) {
        for k in 0...r { q[k] = 0 }
        var sum: UInt32 = 0
        let out = q + (r + 1)
        for j in 0..<w {
            sum &+= col[j]
            out[j] = sum
        }
        for k in (r + 1 + w)..<(w + 2 * r + 1) { q[k] = sum }
    }

    @inline(__always)
    private static func paddedPrefix(_ col: UnsafeMutablePointer<Float>, _ w: Int, _ r: Int, _ q: UnsafeMutablePointer<Float>) {
        for k in 0...r { q[k] = 0 }
        var sum: Float = 0
        let out = q + (r + 1)
        for j in 0..<w {
            sum += col[j]
            out[j] = sum
        }
        for k in (r + 1 + w)..<(w + 2 * r + 1) { q[k] = sum }
    }

    /// Guided-filter coefficients per pixel: a = σ²/(σ²+ε), b = (1−a)·μ over a (2r+1)² window
    /// (clipped at the borders), with running column sums so the cost does not depend on r.
    private func guidedCoefficients(_ img: UnsafeMutablePointer<UInt8>, _ w: Int, _ h: Int, _ r: Int, _ eps: Float,
                                    _ a: UnsafeMutablePointer<Float>, _ b: UnsafeMutablePointer<Float>,
                                    _ invCols: UnsafeMutablePointer<Float>,
                                    _ colI: UnsafeMutablePointer<UInt32>, _ colII: UnsafeMutablePointer<UInt32>,
                                    _ qI: UnsafeMutablePointer<UInt32>, _ qII: UnsafeMutablePointer<UInt32>) {
        colI.initialize(repeating: 0, count: w)
        colII.initialize(repeating: 0, count: w)
        for row in 0...min(r, h - 1) {
            let p = img + row * w
            for x in 0..<w { let v = UInt32(p[x]); colI[x] &+= v; colII[x] &+= v &* v }
        }
        let span = 2 * r + 1
        for y in 0..<h {
            if y > 0 {
                if y + r < h {
                    let p = img + (y + r) * w
                    for x in 0..<w { let v = UInt32(p[x]); colI[x] &+= v; colII[x] &+= v &* v }
                }
                if y - r - 1 >= 0 {
                    let p = img + (y - r - 1) * w
                    for x in 0..<w { let v = UInt32(p[x]); colI[x] &-= v; colII[x] &-= v &* v }
                }
            }
            Self.paddedPrefix(colI, w, r, qI)
            Self.paddedPrefix(colII, w, r, qII)
            let invRows = 1 / Float(min(y + r, h - 1) - max(y - r, 0) + 1)
            let ar = a + y * w, br = b + y * w
            let qIEnd = qI + span, qIIEnd = qII + span   // window ends, so the loop indexes without checked adds
            for x in 0..<w {
                let inv = invRows * invCols[x]
                let mean = Float(Int32(bitPattern: qIEnd[x] &- qI[x])) * inv
                let variance = max(Float(Int32(bitPattern: qIIEnd[x] &- qII[x])) * inv - mean * mean, 0)
                let coef = variance / (variance + eps)
                ar[x] = coef
                br[x] = (1 - coef) * mean
            }
        }
    }

    /// Rounds a value already in 0…255 to a byte without the range check of `UInt8(_:)` (which
    /// keeps the loop from vectorizing): adding 1.5·2²³ leaves the rounded integer in the low bits.
    @inline(__always)
    private static func byte(_ v: Float) -> UInt8 {
        UInt8(truncatingIfNeeded: (v + 12_582_912).bitPattern)
    }

    /// Box-averages a and b, then turns them into the per-pixel smoothing weight (0…255) and the
    /// value to smooth toward.
    private func blendMaps(_ a: UnsafeMutablePointer<Float>, _ b: UnsafeMutablePointer<Float>, _ w: Int, _ h: Int, _ r: Int, _ strength: Float,
                           _ invCols: UnsafeMutablePointer<Float>,
                           _ weight: UnsafeMutablePointer<UInt8>, _ target: UnsafeMutablePointer<UInt8>,
                           _ colA: UnsafeMutablePointer<Float>, _ colB: UnsafeMutablePointer<Float>,
                           _ qA: UnsafeMutablePointer<Float>, _ qB: UnsafeMutablePointer<Float>) {
        colA.initialize(repeating: 0, count: w)
        colB.initialize(repeating: 0, count: w)
        for row in 0...min(r, h - 1) {
            let pa = a + row * w, pb = b + row * w
            for x in 0..<w { colA[x] += pa[x]; colB[x] += pb[x] }
        }
        let span = 2 * r + 1
        let weightScale = strength * 255
        for y in 0..<h {
            if y > 0 {
                if y + r < h {
                    let pa = a + (y + r) * w, pb = b + (y + r) * w
                    for x in 0..<w { colA[x] += pa[x]; colB[x] += pb[x] }
                }
                if y - r - 1 >= 0 {
                    let pa = a + (y - r - 1) * w, pb = b + (y - r - 1) * w
                    for x in 0..<w { colA[x] -= pa[x]; colB[x] -= pb[x] }
                }
            }
            Self.paddedPrefix(colA, w, r, qA)
            Self.paddedPrefix(colB, w, r, qB)
            let invRows = 1 / Float(min(y + r, h - 1) - max(y - r, 0) + 1)
            let wr = weight + y * w, tr = target + y * w
            let qAEnd = qA + span, qBEnd = qB + span
            for x in 0..<w {
                let inv = invRows * invCols[x]
                // Mean of (1 − a): how flat the neighbourhood is.
                let flat = min(max(1 - (qAEnd[x] - qA[x]) * inv, 0), 1)
                let meanB = (qBEnd[x] - qB[x]) * inv
                // Where flat ≈ 0 the weight rounds to 0, so the guard only has to avoid dividing by 0.
                let toward = meanB / max(flat, 1e-4)
                wr[x] = Self.byte(flat * weightScale)
                tr[x] = Self.byte(min(max(toward, 0), 255))
            }
        }
    }
}
