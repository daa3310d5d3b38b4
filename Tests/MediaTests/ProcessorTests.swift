import SeededRandom
import Testing
@testable import Media

@Suite("Processors")
struct ProcessorTests {
    /// Left half luma 60, right half 180, with ±10 noise everywhere: flat areas and one hard edge.
    static func noisyEdge(width: Int = 320, height: Int = 180) -> VideoFrameBuffer {
        var noise = SplitMix64(seed: 7)
        return Pictures.i420(width: width, height: height, y: { x, _ in
            (x < width / 2 ? 60 : 180) + Int.random(in: -10...10, using: &noise)
        }, u: { _, _ in 110 }, v: { _, _ in 150 })
    }

    static func edgeContrast(_ b: VideoFrameBuffer) -> Double {
        let mid = b.width / 2
        let right = b.lumaStats(x: mid + 1 ..< mid + 3, y: 10 ..< b.height - 10).mean
        let left = b.lumaStats(x: mid - 3 ..< mid - 1, y: 10 ..< b.height - 10).mean
        return right - left
    }

    @Test func beautySmoothsFlatAreasAndKeepsTheEdge() throws {
        let src = Self.noisyEdge()
        let out = try #require(BeautyFilter(strength: 1).process(VideoFrame(buffer: src, timestampNs: 0))).buffer
        for flat in [20..<140, 180..<300] {
            let before = src.lumaStats(x: flat, y: 20..<160), after = out.lumaStats(x: flat, y: 20..<160)
            #expect(after.variance <= 0.5 * before.variance, "noise variance \(before.variance) → \(after.variance)")
            // The mild brightness lift: mid-tones go up a little, never down.
            #expect(after.mean >= before.mean && after.mean <= before.mean + 8, "mean \(before.mean) → \(after.mean)")
        }
        let c0 = Self.edgeContrast(src), c1 = Self.edgeContrast(out)
        #expect(c1 >= 0.9 * c0, "edge contrast \(c0) → \(c1)")
        // Chroma untouched.
        #expect(out.chroma(x: 100, y: 50).u == 110 && out.chroma(x: 100, y: 50).v == 150)
    }

    @Test func beautyStrengthZeroIsIdentity() throws {
        let frame = VideoFrame(buffer: Self.noisyEdge(), timestampNs: 5)
        let filter = BeautyFilter(strength: 0)
        let out = try #require(filter.process(frame))
        #expect(out.buffer.samePixels(as: frame.buffer))
        #expect(out.timestampNs == 5)
        filter.strength = -3   // clamped
        #expect(filter.strength == 0)
    }

    @Test func beautyStrengthScalesTheEffect() throws {
        let src = Self.noisyEdge()
        let half = try #require(BeautyFilter(strength: 0.4).process(VideoFrame(buffer: src, timestampNs: 0))).buffer
        let full = try #require(BeautyFilter(strength: 1).process(VideoFrame(buffer: src, timestampNs: 0))).buffer
        let v0 = src.lumaStats(x: 20..<140, y: 20..<160).variance
        let vHalf = half.lumaStats(x: 20..<140, y: 20..<160).variance
        let vFull = full.lumaStats(x: 20..<140, y: 20..<160).variance
        #expect(vFull < vHalf && vHalf < v0)
    }

    @Test func beautyKeepsNV12AndTurnsBGRAIntoI420() throws {
        let src = Self.noisyEdge(width: 96, height: 64)
        let filter = BeautyFilter(strength: 0.8)
        let nv12 = try #require(filter.process(VideoFrame(buffer: src.converted(to: .nv12FullRange), rotation: .r90, timestampNs: 3)))
        #expect(nv12.format == .nv12FullRange && nv12.rotation == .r90 && nv12.timestampNs == 3)
        let bgra = try #require(filter.process(VideoFrame(buffer: src.converted(to: .bgra), timestampNs: 0)))
        #expect(bgra.format == .i420 && bgra.width == 96)
        // Odd sizes work too.
        let odd = try #require(filter.process(VideoFrame(buffer: Self.noisyEdge(width: 33, height: 17), timestampNs: 0)))
        #expect(odd.width == 33 && odd.height == 17)
    }

    @Test func colorAdjustMovesLumaTheRightWay() throws {
        let frame = VideoFrame(buffer: Pictures.gradient(width: 64, height: 48), timestampNs: 0)
        let mean = frame.buffer.meanLuma()
        let brighter = try #require(ColorAdjust(brightness: 0.2).process(frame)).buffer.meanLuma()
        let darker = try #require(ColorAdjust(brightness: -0.2).process(frame)).buffer.meanLuma()
        #expect(brighter > mean + 20 && darker < mean - 20)
        let std0 = frame.buffer.lumaStats(x: 0..<64, y: 0..<48).variance
        let std1 = try #require(ColorAdjust(contrast: 1.5).process(frame)).buffer.lumaStats(x: 0..<64, y: 0..<48).variance
        #expect(std1 > 2 * std0)
        let grey = try #require(ColorAdjust(saturation: 0).process(frame)).buffer
        #expect(grey.chroma(x: 10, y: 10).u == 128 && grey.chroma(x: 60, y: 40).v == 128)
        let identity = ColorAdjust()
        #expect(try #require(identity.process(frame)).buffer === frame.buffer)
        identity.brightness = 0.5
        #expect(try #require(identity.process(frame)).buffer.meanLuma() > mean + 50)
        identity.saturation = .nan   // ignored
        #expect(identity.saturation == 1)
    }

    @Test func colorAdjustOnNV12ScalesInterleavedChroma() throws {
        let src = Pictures.gradient(width: 32, height: 16).converted(to: .nv12VideoRange)
        let out = try #require(ColorAdjust(saturation: 2).process(VideoFrame(buffer: src, timestampNs: 0))).buffer
        #expect(out.format == .nv12VideoRange)
        let u0 = Int(src.planePointer(1)[0]), u1 = Int(out.planePointer(1)[0])
        #expect(u1 - 128 == 2 * (u0 - 128))
    }

    @Test func mirrorProcessorFlips() throws {
        let out = try #require(MirrorProcessor().process(VideoFrame(buffer: Pictures.marked(), timestampNs: 9)))
        #expect(out.buffer.luma(x: 60, y: 4) == 180 && out.buffer.luma(x: 4, y: 4) == 50)
        #expect(out.timestampNs == 9)
    }

    @Test func cropZoomEnlargesAroundTheCenter() throws {
        // A 40x40 bright block in the middle of 640x360 doubles to 80x80 at zoom 2.
        let src = Pictures.i420(width: 640, height: 360, y: { x, y in (300..<340).contains(x) && (160..<200).contains(y) ? 200 : 40 })
        let zoom = CropZoomProcessor(zoom: 2)
        #expect(zoom.cropRect(width: 640, height: 360) == PixelRect(x: 160, y: 90, width: 320, height: 180))
        let out = try #require(zoom.process(VideoFrame(buffer: src, timestampNs: 0))).buffer
        #expect(out.width == 640 && out.height == 360)
        #expect(out.luma(x: 284, y: 144) == 200 && out.luma(x: 355, y: 215) == 200)
        #expect(out.luma(x: 275, y: 135) == 40)
        // Off-centre: the window is kept inside the picture.
        zoom.center = .init(x: 0, y: 0)
        #expect(zoom.cropRect(width: 640, height: 360) == PixelRect(x: 0, y: 0, width: 320, height: 180))
        zoom.zoom = 1
        #expect(try #require(zoom.process(VideoFrame(buffer: src, timestampNs: 0))).buffer === src)
        zoom.zoom = 1000
        #expect(zoom.zoom == CropZoomProcessor.maxZoom)
    }

    /// Adds a fixed amount to luma (to check the chain's order).
    final class AddLuma: VideoProcessor {
        let amount: Int
        init(_ amount: Int) { self.amount = amount }
        func process(_ frame: VideoFrame) -> VideoFrame? {
            ColorAdjust(brightness: Double(amount) / 128).process(frame)
        }
    }

    final class DropAll: VideoProcessor {
        func process(_ frame: VideoFrame) -> VideoFrame? { nil }
    }

    @Test func chainAppliesInOrderAndCanBeEdited() throws {
        let frame = VideoFrame(buffer: Pictures.i420(width: 16, height: 16, y: { _, _ in 100 }), timestampNs: 0)
        let add = AddLuma(20), mirror = MirrorProcessor(), drop = DropAll()
        let chain = ProcessorChain([add])
        #expect(try #require(chain.process(frame)).buffer.luma(x: 0, y: 0) == 120)
        chain.append(add)
        #expect(try #require(chain.process(frame)).buffer.luma(x: 0, y: 0) == 140)
        chain.insert(mirror, at: 99)
        #expect(chain.processors.count == 3 && chain.processors.last === mirror)
        chain.remove(add)
        #expect(chain.processors.count == 1)
        chain.insert(drop, at: 0)
        #expect(chain.process(frame) == nil)
        chain.removeAll()
        #expect(chain.isEmpty)
        #expect(try #require(chain.process(frame)).buffer === frame.buffer)
    }

    @Test func chainCanBeEditedWhileFramesFlow() async {
        let chain = ProcessorChain()
        let frame = VideoFrame(buffer: Pictures.i420(width: 16, height: 16, y: { _, _ in 100 }), timestampNs: 0)
        let add = AddLuma(10)
        await withTaskGroup(of: [Int].self) { group in
            group.addTask {
                var seen: [Int] = []
                for _ in 0..<300 { seen.append(Int(chain.process(frame)?.buffer.luma(x: 0, y: 0) ?? 0)) }
                return seen
            }
            group.addTask {
                for i in 0..<300 { if i % 2 == 0 { chain.append(add) } else { chain.remove(add) } }
                return []
            }
            for await seen in group {
                // Each frame saw one consistent list: no processor, or one.
                #expect(seen.allSatisfy { $0 == 100 || $0 == 110 })
            }
        }
    }
}
