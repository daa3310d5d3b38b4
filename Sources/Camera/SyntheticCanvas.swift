import Media
import Locks

/// The static part of a synthetic camera's world, painted once per (camera, size, upright
/// orientation) and kept: a BGRA picture of surface colours (albedo, gamma-2.2 encoded) whose
/// alpha byte says how far each surface is from the camera (`SyntheticCanvas.Depth`), plus a
/// coarse grid of mean linear luminance per depth that auto exposure meters on.
///
/// Layout, in coordinates normalised to the upright picture (u across, v down), the same for both
/// cameras so tests know where to look:
/// - identifying block u 0.04–0.30, v 0.16–0.50: **magenta** on the front camera, **cyan** on the back;
/// - bright region (window / cloud, near white) u 0.72–0.96, v 0.14–0.42;
/// - dark region (sofa / rock) u 0.04–0.30, v 0.64–0.96;
/// - neutral grey patch (albedo 128) u 0.74–0.94, v 0.62–0.88;
/// - centre: on the back camera a colour test chart at the near distance with a fine checker in
///   its middle; on the front camera the room's wall, where the scene's faces are drawn per frame
///   (`SyntheticScene.Face`: the subject's widest row is the picture's centre row);
/// - the top 1/8 is left plain so a burned-in test-pattern band hides nothing.
final class SyntheticCanvas: Sendable {
    /// Surface distance classes stored in the alpha byte (the torch lights near things most).
    enum Depth: UInt8 {
        case far = 0, mid = 100, near = 200
        /// Depth class 0, 1 or 2 of an alpha value (interpolated alpha rounds to the nearer class).
        static func index(ofAlpha a: UInt8) -> Int { min(2, (Int(a) + 50) / 100) }
    }

    static let gridSize = 16

    let position: CameraPosition
    let width: Int
    let height: Int
    /// BGRA albedo, alpha = `Depth`.
    let picture: VideoFrameBuffer
    /// `meanLuminance[depth][cell]`: mean over a grid cell of linear luminance of the pixels at
    /// that depth (pixels at other depths count as 0), cells row-major, `gridSize`² of them.
    let meanLuminance: [[Double]]

    init(position: CameraPosition, width: Int, height: Int) {
        self.position = position
        self.width = width
        self.height = height
        let painter = CanvasPainter(width: width, height: height)
        if position == .back { painter.paintLandscape() } else { painter.paintRoom() }
        picture = painter.buffer
        meanLuminance = Self.meter(painter.buffer)
    }

    private static func meter(_ buffer: VideoFrameBuffer) -> [[Double]] {
        let n = gridSize, w = buffer.width, h = buffer.height
        var sums = [[Double]](repeating: [Double](repeating: 0, count: n * n), count: 3)
        var counts = [Double](repeating: 0, count: n * n)
        let step = max(1, min(w, h) / 180)   // sampling keeps 4K canvases cheap
        let lin = ToneModel.linearTable
        let base = buffer.planePointer(0), stride = buffer.strides[0]
        var y = 0
        while y < h {
            let row = base + y * stride
            let gy = y * n / h
            var x = 0
            while x < w {
                let p = row + 4 * x
                let lum = 0.0722 * lin[Int(p[0])] + 0.7152 * lin[Int(p[1])] + 0.2126 * lin[Int(p[2])]
                let cell = gy * n + x * n / w
                sums[Depth.index(ofAlpha: p[3])][cell] += lum
                counts[cell] += 1
                x += step
            }
            y += step
        }
        for d in 0..<3 {
            for c in 0..<(n * n) where counts[c] > 0 { sums[d][c] /= counts[c] }
        }
        return sums
    }

    // MARK: cache

    private struct Key: Hashable {
        var position: CameraPosition
        var width: Int
        var height: Int
    }

    /// Recently used canvases (a 4K one is 33 MB, so only a few are kept).
    private static let cache = Locked<[(Key, SyntheticCanvas)]>([])
    private static let cacheLimit = 4

    static func shared(position: CameraPosition, width: Int, height: Int) -> SyntheticCanvas {
        let key = Key(position: position == .back ? .back : .front, width: width, height: height)
        if let hit = cache.withLock({ c -> SyntheticCanvas? in
            guard let i = c.firstIndex(where: { $0.0 == key }) else { return nil }
            let entry = c.remove(at: i)
            c.append(entry)
            return entry.1
        }) { return hit }
        // Painted outside the lock: a 4K canvas takes a while and other sizes need not wait.
        let canvas = SyntheticCanvas(position: key.position, width: width, height: height)
        cache.withLock { c in
            if !c.contains(where: { $0.0 == key }) { c.append((key, canvas)) }
            if c.count > cacheLimit { c.removeFirst(c.count - cacheLimit) }
        }
        return canvas
    }
}

/// Paints shapes into a BGRA buffer in normalised coordinates (round things, like faces, are
/// sized in units of the picture's shorter side so they stay round in any aspect ratio).
final class CanvasPainter {
    let buffer: VideoFrameBuffer
    let width: Int, height: Int
    /// The shorter side in pixels.
    let unit: Double

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        buffer = VideoFrameBuffer(format: .bgra, width: width, height: height)
        unit = Double(min(width, height))
    }

    typealias RGB = (r: Double, g: Double, b: Double)

    /// Small deterministic per-pixel noise in -1...1 (surface texture that focus can blur away).
    @inline(__always) static func noise(_ x: Int, _ y: Int) -> Double {
        var h = UInt32(truncatingIfNeeded: x &* 374_761_393 &+ y &* 668_265_263)
        h = (h ^ (h >> 13)) &* 1_274_126_177
        h ^= h >> 16
        return Double(h & 0xFF) / 127.5 - 1
    }

    @inline(__always) func put(_ x: Int, _ y: Int, _ c: RGB, _ depth: SyntheticCanvas.Depth, texture: Double) {
        let t = texture == 0 ? 0 : texture * Self.noise(x, y)
        let p = buffer.planePointer(0) + y * buffer.strides[0] + 4 * x
        p[0] = UInt8(clamping: Int((c.b + t).rounded()))
        p[1] = UInt8(clamping: Int((c.g + t).rounded()))
        p[2] = UInt8(clamping: Int((c.r + t).rounded()))
        p[3] = depth.rawValue
    }

    private func px(_ u: Double) -> Int { min(width, max(0, Int((u * Double(width)).rounded()))) }
    private func py(_ v: Double) -> Int { min(height, max(0, Int((v * Double(height)).rounded()))) }

    /// Fills u0..<u1 × v0..<v1, colour interpolated from `top` to `bottom` down the rectangle.
    func rect(_ u0: Double, _ v0: Double, _ u1: Double, _ v1: Double, _ top: RGB, _ bottom: RGB? = nil,
              _ depth: SyntheticCanvas.Depth, texture: Double = 0) {
        let x0 = px(u0), x1 = px(u1), y0 = py(v0), y1 = py(v1)
        guard x1 > x0, y1 > y0 else { return }
        let b = bottom ?? top
        for y in y0..<y1 {
            let f = Double(y - y0) / Double(max(1, y1 - y0 - 1))
            let c: RGB = (top.r + (b.r - top.r) * f, top.g + (b.g - top.g) * f, top.b + (b.b - top.b) * f)
            for x in x0..<x1 { put(x, y, c, depth, texture: texture) }
        }
    }

    /// Things every scene has, at the places the type's doc comment lists.
    private func commonPatches(identifying: RGB, bright: RGB, dark: RGB) {
        rect(0.04, 0.16, 0.30, 0.50, identifying, nil, .mid)
        rect(0.72, 0.14, 0.96, 0.42, bright, nil, .far)
        rect(0.04, 0.64, 0.30, 0.96, dark, nil, .mid, texture: 3)
        rect(0.74, 0.62, 0.94, 0.88, (128, 128, 128), nil, .mid)
    }

    /// Front camera: a room — wall, magenta poster, window, sofa, grey card (the people in it
    /// are `SyntheticScene.Face`s, drawn per frame).
    func paintRoom() {
        rect(0, 0, 1, 1, (176, 164, 150), (136, 126, 116), .mid, texture: 6)
        commonPatches(identifying: (210, 40, 200), bright: (250, 250, 246), dark: (26, 22, 30))
    }

    /// Back camera: a landscape — sky, mountains, grass, cyan sign, cloud, rock, grey card — and
    /// a test chart held near the camera.
    func paintLandscape() {
        let horizon = 0.58
        rect(0, 0, 1, horizon, (150, 185, 225), (196, 214, 236), .far)
        // Mountains: a ridge of overlapping peaks down to the horizon.
        let peaks: [(u: Double, top: Double, halfWidth: Double)] = [(0.18, 0.40, 0.22), (0.45, 0.33, 0.2), (0.78, 0.38, 0.25)]
        let hy = Int(horizon * Double(height))
        for x in 0..<width {
            let u = (Double(x) + 0.5) / Double(width)
            var ridge = horizon
            for p in peaks {
                let d = abs(u - p.u) / p.halfWidth
                if d < 1 { ridge = min(ridge, p.top + (horizon - p.top) * d) }
            }
            let ry = Int(ridge * Double(height))
            for y in ry..<max(ry, hy) { put(x, y, (110, 120, 142), .far, texture: 6) }
        }
        rect(0, horizon, 1, 1, (84, 140, 60), (60, 118, 44), .mid, texture: 14)   // grass
        commonPatches(identifying: (30, 200, 215), bright: (250, 250, 246), dark: (25, 25, 30))
        // Test chart: white board with a 4×4 grid of colour patches; the middle four are a fine
        // black/white checker (2-pixel squares) — the detail focus shows.
        let side = 0.40 * unit, cx = 0.5 * Double(width), cy = 0.5 * Double(height)
        let x0 = Int(cx - side / 2), y0 = Int(cy - side / 2), s = Int(side)
        let border = max(1, Int(0.02 * unit))
        let patches: [RGB] = [(115, 82, 68), (194, 150, 130), (98, 122, 157), (87, 108, 67),
                              (133, 128, 177), (214, 126, 44), (0, 0, 0), (80, 91, 166),
                              (193, 90, 99), (0, 0, 0), (0, 0, 0), (157, 188, 64),
                              (224, 163, 46), (243, 243, 242), (160, 160, 160), (85, 85, 85)]
        let cell = max(1, (s - 2 * border) / 4)
        for y in max(0, y0)..<min(height, y0 + s) {
            for x in max(0, x0)..<min(width, x0 + s) {
                let ix = (x - x0 - border), iy = (y - y0 - border)
                guard ix >= 0, iy >= 0, ix < 4 * cell, iy < 4 * cell else {
                    put(x, y, (236, 236, 236), .near, texture: 0)
                    continue
                }
                let col = ix / cell, row = iy / cell
                if (1...2).contains(col) && (1...2).contains(row) {
                    let on = ((x >> 1) ^ (y >> 1)) & 1 == 1
                    put(x, y, on ? (235, 235, 235) : (20, 20, 20), .near, texture: 0)
                } else {
                    put(x, y, patches[row * 4 + col], .near, texture: 2)
                }
            }
        }
    }
}
