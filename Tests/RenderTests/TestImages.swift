import Foundation
import Media

/// 100 % colour bars, left to right: white, yellow, cyan, green, magenta, red, blue, black.
enum ColorBars {
    static let rgb: [(r: UInt8, g: UInt8, b: UInt8)] = [
        (255, 255, 255), (255, 255, 0), (0, 255, 255), (0, 255, 0),
        (255, 0, 255), (255, 0, 0), (0, 0, 255), (0, 0, 0),
    ]

    /// BT.601 limited-range Y, Cb, Cr of an RGB colour.
    static func yuv(_ c: (r: UInt8, g: UInt8, b: UInt8)) -> (y: UInt8, u: UInt8, v: UInt8) {
        let r = Double(c.r) / 255, g = Double(c.g) / 255, b = Double(c.b) / 255
        let y = 16 + 65.481 * r + 128.553 * g + 24.966 * b
        let u = 128 - 37.797 * r - 74.203 * g + 112.0 * b
        let v = 128 + 112.0 * r - 93.786 * g - 18.214 * b
        return (UInt8(y.rounded()), UInt8(u.rounded()), UInt8(v.rounded()))
    }

    /// Bar index of column x in a picture `width` wide.
    static func bar(x: Int, width: Int) -> Int { min(7, x * 8 / width) }

    /// An I420 colour-bar picture (width a multiple of 16 keeps each bar's chroma pure).
    static func i420(width: Int, height: Int) -> VideoFrameBuffer {
        let buf = VideoFrameBuffer(format: .i420, width: width, height: height)
        for yy in 0..<height {
            for x in 0..<width { buf.planePointer(0)[yy * buf.strides[0] + x] = yuv(rgb[bar(x: x, width: width)]).y }
        }
        for yy in 0..<(height + 1) / 2 {
            for x in 0..<(width + 1) / 2 {
                let c = yuv(rgb[bar(x: 2 * x, width: width)])
                buf.planePointer(1)[yy * buf.strides[1] + x] = c.u
                buf.planePointer(2)[yy * buf.strides[2] + x] = c.v
            }
        }
        return buf
    }

    static func nv12(width: Int, height: Int) -> VideoFrameBuffer {
        let buf = VideoFrameBuffer(format: .nv12VideoRange, width: width, height: height)
        for yy in 0..<height {
            for x in 0..<width { buf.planePointer(0)[yy * buf.strides[0] + x] = yuv(rgb[bar(x: x, width: width)]).y }
        }
        for yy in 0..<(height + 1) / 2 {
            for x in 0..<(width + 1) / 2 {
                let c = yuv(rgb[bar(x: 2 * x, width: width)])
                buf.planePointer(1)[yy * buf.strides[1] + 2 * x] = c.u
                buf.planePointer(1)[yy * buf.strides[1] + 2 * x + 1] = c.v
            }
        }
        return buf
    }

    static func bgra(width: Int, height: Int) -> VideoFrameBuffer {
        let buf = VideoFrameBuffer(format: .bgra, width: width, height: height)
        for yy in 0..<height {
            for x in 0..<width {
                let c = rgb[bar(x: x, width: width)], p = yy * buf.strides[0] + 4 * x
                buf.planePointer(0)[p] = c.b
                buf.planePointer(0)[p + 1] = c.g
                buf.planePointer(0)[p + 2] = c.r
                buf.planePointer(0)[p + 3] = 255
            }
        }
        return buf
    }
}

/// An I420 picture whose every sample is a known function of its position and a seed.
func patternI420(width: Int, height: Int, seed: Int) -> VideoFrameBuffer {
    let buf = VideoFrameBuffer(format: .i420, width: width, height: height)
    for p in 0..<3 {
        for y in 0..<buf.planeHeight(p) {
            for x in 0..<buf.planeWidth(p) {
                buf.planePointer(p)[y * buf.strides[p] + x] = UInt8(truncatingIfNeeded: x * 7 + y * 13 + p * 50 + seed * 31)
            }
        }
    }
    return buf
}

/// The planes of an I420 buffer packed without padding (what a Y4M frame holds).
func packedPlanes(_ buf: VideoFrameBuffer) -> [UInt8] {
    var out: [UInt8] = []
    for p in 0..<3 {
        for y in 0..<buf.planeHeight(p) {
            for x in 0..<buf.planeWidth(p) { out.append(buf.planePointer(p)[y * buf.strides[p] + x]) }
        }
    }
    return out
}

func rgbAt(_ rgb: [UInt8], width: Int, x: Int, y: Int) -> (r: Int, g: Int, b: Int) {
    let i = (y * width + x) * 3
    return (Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2]))
}

func close(_ a: (r: Int, g: Int, b: Int), _ e: (r: UInt8, g: UInt8, b: UInt8), within tol: Int) -> Bool {
    abs(a.r - Int(e.r)) <= tol && abs(a.g - Int(e.g)) <= tol && abs(a.b - Int(e.b)) <= tol
}

func readFile(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}
