import Media
import SeededRandom
import Testing

// Faces on frames: the geometry of normalized boxes, and processors that move pixels moving the
// faces with them — checked on the pixels: a white block painted where the face is must still be
// where the processed frame says the face is.

/// A black I420 frame, turned by `rotation` for display, with a white block where `face` is.
private func frameWithFace(_ face: Face, rotation: VideoRotation, width: Int = 640, height: Int = 360) -> VideoFrame {
    var frame = VideoFrame(buffer: VideoFrameBuffer.filledI420(width: width, height: height, y: 16, u: 128, v: 128),
                           rotation: rotation, timestampNs: 0, faces: [face])
    let r = frame.bufferRect(of: face)
    let y = frame.buffer.planePointer(0), stride = frame.buffer.strides[0]
    for row in r.y..<(r.y + r.height) { for x in r.x..<(r.x + r.width) { y[row * stride + x] = 235 } }
    frame.timestampNs = 1
    return frame
}

/// Bounding box of the bright luma in the buffer, in pixels.
private func brightBox(_ b: VideoFrameBuffer) -> NormalizedRect {
    let y = b.planePointer(0)
    var x0 = b.width, y0 = b.height, x1 = -1, y1 = -1
    for row in 0..<b.height {
        for x in 0..<b.width where y[row * b.strides[0] + x] > 128 {
            x0 = min(x0, x); x1 = max(x1, x); y0 = min(y0, row); y1 = max(y1, row)
        }
    }
    return NormalizedRect(x: Double(x0), y: Double(y0), width: Double(x1 + 1 - x0), height: Double(y1 + 1 - y0))
}

private func pixels(_ r: PixelRect) -> NormalizedRect {
    NormalizedRect(x: Double(r.x), y: Double(r.y), width: Double(r.width), height: Double(r.height))
}

@Suite struct FaceTests {
    let face = Face(id: 4, bounds: NormalizedRect(x: 0.15, y: 0.2, width: 0.3, height: 0.25), rollAngle: 10, yawAngle: -20)

    @Test func rectGeometry() {
        func same(_ a: NormalizedRect, _ b: NormalizedRect) -> Bool {
            abs(a.x - b.x) < 1e-12 && abs(a.y - b.y) < 1e-12 && abs(a.width - b.width) < 1e-12 && abs(a.height - b.height) < 1e-12
        }
        let r = NormalizedRect(x: 0.1, y: 0.2, width: 0.3, height: 0.4)
        for rotation in VideoRotation.allCases {
            #expect(same(r.rotated(rotation).rotated(rotation.inverse), r))
            #expect(abs(r.rotated(rotation).area - r.area) < 1e-12)
        }
        #expect(same(r.rotated(.r90), NormalizedRect(x: 0.4, y: 0.1, width: 0.4, height: 0.3)))
        #expect(same(r.mirrored.mirrored, r) && same(r.mirrored, NormalizedRect(x: 0.6, y: 0.2, width: 0.3, height: 0.4)))
        #expect(abs(r.iou(r) - 1) < 1e-12 && r.iou(NormalizedRect(x: 0.5, y: 0.7, width: 0.1, height: 0.1)) == 0)
        #expect(abs(r.iou(NormalizedRect(x: 0.1, y: 0.2, width: 0.15, height: 0.4)) - 0.5) < 1e-12)
        #expect(same(NormalizedRect(x: -0.2, y: 0.9, width: 0.4, height: 0.3).clipped, NormalizedRect(x: 0, y: 0.9, width: 0.2, height: 0.1)))
        #expect(r.pixelRect(width: 100, height: 50) == PixelRect(x: 10, y: 10, width: 30, height: 20))
        #expect(face.mirrored.rollAngle == -10 && face.mirrored.yawAngle == 20)
    }

    @Test func processorsMoveFacesWithThePixels() {
        for rotation in [VideoRotation.r0, .r90] {
            let source = frameWithFace(face, rotation: rotation)
            #expect(brightBox(source.buffer) == pixels(source.bufferRect(of: face)))
            let steps: [(String, (VideoFrame) -> VideoFrame?)] = [
                ("mirror", MirrorProcessor().process),
                ("zoom", CropZoomProcessor(zoom: 1.6, center: .init(x: 0.4, y: 0.45)).process),
                ("upright", { $0.applyingRotation() }),
                ("colour", ColorAdjust(brightness: 0.02).process),
            ]
            for (name, step) in steps {
                guard let out = step(source), let moved = out.faces?.first else {
                    Issue.record("\(name) at \(rotation): no face on the output")
                    continue
                }
                let iou = brightBox(out.buffer).iou(pixels(out.bufferRect(of: moved)))
                #expect(iou > 0.9, "\(name) at \(rotation): block \(brightBox(out.buffer)) vs face \(out.bufferRect(of: moved)) IoU \(iou)")
                #expect(moved.id == face.id)
            }
        }
    }

    @Test func adaptedOutputCropsTheFacesToo() {
        let source = VideoSource()
        let sink = CollectingRenderer()
        source.addSink(sink)
        source.adaptOutputFormat(width: 360, height: 360, fps: 0)
        source.deliverCapturedFrame(frameWithFace(face, rotation: .r0))
        guard let out = sink.frames.last, let moved = out.faces?.first else {
            Issue.record("no frame or no face out of the source")
            return
        }
        #expect(out.width == 360 && out.height == 360)
        #expect(brightBox(out.buffer).iou(pixels(out.bufferRect(of: moved))) > 0.9)
    }
}

@Suite struct BeautyOnFacesTests {
    /// Noise (luma 100 ± 20) everywhere, the face's box known.
    static func noisy() -> VideoFrameBuffer {
        var noise = SplitMix64(seed: 7)
        return Pictures.i420(width: 320, height: 180, y: { _, _ in Int.random(in: 80...120, using: &noise) })
    }

    @Test func facesOnlySmoothsTheFacesAndLeavesTheRest() throws {
        let src = Self.noisy()
        let face = Face(id: 1, bounds: NormalizedRect(x: 0.4, y: 0.3, width: 0.25, height: 0.4))
        let filter = BeautyFilter(strength: 1, facesOnly: true)
        let out = try #require(filter.process(VideoFrame(buffer: src, timestampNs: 0, faces: [face]))).buffer
        // Inside the face: smoothed. The face box grown by a fifth each side is 112…224 x 39…141.
        let before = src.lumaStats(x: 136..<200, y: 60..<120), after = out.lumaStats(x: 136..<200, y: 60..<120)
        #expect(after.variance <= 0.5 * before.variance, "face variance \(before.variance) → \(after.variance)")
        // Outside the grown box: the very same pixels.
        var changed = 0
        for (xs, ys) in [(0..<110, 0..<180), (226..<320, 0..<180), (0..<320, 0..<38), (0..<320, 143..<180)] {
            for y in ys { for x in xs where out.luma(x: x, y: y) != src.luma(x: x, y: y) { changed += 1 } }
        }
        #expect(changed == 0)
        // No faces: nothing to beautify.
        let plain = try #require(filter.process(VideoFrame(buffer: src, timestampNs: 0, faces: [])))
        #expect(plain.buffer === src)
    }
}
