import Foundation
import Media
import Locks

/// Deterministic test pictures: a horizontal gradient that drifts, a diagonal texture that scrolls
/// (detail for rate control to spend bits on) and a bright box that moves across.
enum SyntheticVideo {
    private struct Key: Hashable { var index, width, height: Int }
    /// Pictures are immutable once made, so tests running in parallel share them (debug builds
    /// are slow at drawing).
    private static let cache = Locked<[Key: VideoFrameBuffer]>([:])

    static func frame(_ index: Int, width: Int, height: Int, fps: Double = 30) -> VideoFrame {
        let key = Key(index: index, width: width, height: height)
        let buffer = cache.withLock { $0[key] } ?? {
            let b = draw(index, width: width, height: height)
            cache.withLock { $0[key] = b }
            return b
        }()
        return VideoFrame(buffer: buffer, timestampNs: Int64(Double(index) * 1_000_000_000 / fps))
    }

    private static func draw(_ index: Int, width: Int, height: Int) -> VideoFrameBuffer {
        let buffer = VideoFrameBuffer(format: .i420, width: width, height: height)
        let y = buffer.planePointer(0), u = buffer.planePointer(1), v = buffer.planePointer(2)
        let sy = buffer.strides[0], su = buffer.strides[1], sv = buffer.strides[2]
        let shift = index * 3
        let boxSize = max(16, width / 10)
        let boxX = (index * 6) % max(1, width - boxSize), boxY = (index * 3) % max(1, height - boxSize)
        for row in 0..<height {
            let line = y + row * sy
            for col in 0..<width {
                let gradient = 40 + ((col + shift) % width) * 120 / width + row * 40 / height
                let tx = col + shift, ty = row
                let texture = ((tx / 4 + ty / 4) % 2 == 0 ? 10 : -10) + ((tx * 3 + ty * 5) % 17) - 8
                var value = gradient + texture
                if col >= boxX && col < boxX + boxSize && row >= boxY && row < boxY + boxSize {
                    value = ((col - boxX) / 8 + (row - boxY) / 8) % 2 == 0 ? 225 : 190
                }
                line[col] = UInt8(clamping: value)
            }
        }
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        for row in 0..<ch {
            let lu = u + row * su, lv = v + row * sv
            for col in 0..<cw {
                let inBox = col * 2 >= boxX && col * 2 < boxX + boxSize && row * 2 >= boxY && row * 2 < boxY + boxSize
                lu[col] = inBox ? 90 : UInt8(clamping: 100 + ((col + shift / 2) % cw) * 56 / cw)
                lv[col] = inBox ? 200 : UInt8(clamping: 150 - row * 40 / ch)
            }
        }
        return buffer
    }

    static func rtpTimestamp(_ index: Int, fps: Double = 30) -> UInt32 {
        UInt32(truncatingIfNeeded: Int(Double(index) * 90_000 / fps))
    }
}

/// PSNR in dB over all three planes of two I420 pictures of the same size.
func psnr(_ a: VideoFrameBuffer, _ b: VideoFrameBuffer) -> Double {
    var sum = 0.0, count = 0
    for p in 0..<3 {
        let pa = a.planePointer(p), pb = b.planePointer(p)
        for row in 0..<a.planeHeight(p) {
            let la = pa + row * a.strides[p], lb = pb + row * b.strides[p]
            for col in 0..<a.planeWidth(p) {
                let d = Double(Int(la[col]) - Int(lb[col]))
                sum += d * d
            }
        }
        count += a.planeWidth(p) * a.planeHeight(p)
    }
    let mse = sum / Double(max(count, 1))
    return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
}

/// NAL unit types of an Annex-B stream (test-side parser, independent of the library's).
func annexBNalTypes(_ data: [UInt8]) -> [UInt8] {
    var types: [UInt8] = []
    var i = 0
    while i + 3 < data.count {
        if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 {
            types.append(data[i + 3] & 0x1F)
            i += 3
        } else {
            i += 1
        }
    }
    return types
}

/// The SPS NAL units (header byte first) of an Annex-B stream.
func annexBSPS(_ data: [UInt8]) -> [UInt8]? {
    var i = 0
    while i + 3 < data.count {
        if data[i] == 0 && data[i + 1] == 0 && data[i + 2] == 1 && data[i + 3] & 0x1F == 7 {
            return Array(data[(i + 3)...].prefix(32))
        }
        i += 1
    }
    return nil
}

