// A Y4M clip busy enough that an H.264 encoder capped at 1.5 Mbps fills its budget at 720p30:
// the test pattern is so easy to code that OpenH264 sends it at ~0.5–0.8 Mbps, which would make
// the relay's fan-out a ~65 packets/s stream instead of the ~150 of a real 1.5 Mbps camera.
// A scrolling gradient with a fine texture, a moving box and fresh sensor-like noise every frame.
import Foundation

/// Writes `frames` frames of 4:2:0 video at 30 fps to `path` (skipped if it already exists).
func writeBusyY4M(path: String, width: Int = 1280, height: Int = 720, frames: Int = 30) throws {
    if FileManager.default.fileExists(atPath: path) { return }
    guard let out = FileHandle(forWritingAtPath: path) ?? {
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        return FileHandle(forWritingAtPath: path)
    }() else { throw BenchError("cannot write \(path)") }
    defer { try? out.close() }
    out.write(Data("YUV4MPEG2 W\(width) H\(height) F30:1 Ip A1:1 C420jpeg\n".utf8))
    var seed: UInt32 = 2024
    let chroma = (width / 2) * (height / 2)
    var frame = [UInt8](repeating: 0, count: width * height + 2 * chroma)
    for n in 0..<frames {
        // One full scroll of the gradient per clip, so the loop point is not a scene cut.
        let shift = n * width / frames
        let box = height / 5, boxX = (n * (width - box)) / frames, boxY = height / 3
        for row in 0..<height {
            for col in 0..<width {
                seed = seed &* 1_664_525 &+ 1_013_904_223
                let x = (col + shift) % width
                var v = 40 + x * 140 / width + row * 40 / height + ((x * 3 + row * 5) % 17) - 8
                if col >= boxX && col < boxX + box && row >= boxY && row < boxY + box { v = 200 + ((col / 3 + row / 3) & 1) * 20 }
                v += Int(seed >> 28) - 8
                frame[row * width + col] = UInt8(clamping: v)
            }
        }
        for plane in 0..<2 {
            let base = width * height + plane * chroma
            for row in 0..<(height / 2) {
                for col in 0..<(width / 2) {
                    let x = (col + shift / 2) % (width / 2)
                    frame[base + row * (width / 2) + col] = UInt8(truncatingIfNeeded: 100 + plane * 40 + (x * 64 / (width / 2)) + (row & 7))
                }
            }
        }
        out.write(Data("FRAME\n".utf8))
        out.write(Data(frame))
    }
}
