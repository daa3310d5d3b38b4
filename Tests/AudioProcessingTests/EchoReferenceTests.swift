import Testing
@testable import AudioProcessing

@Suite struct EchoReferenceTests {
    /// Render frames numbered by their first sample, so a reference frame says where it came from.
    private func render(_ r: inout EchoReference, frame n: Int) {
        let samples = (0..<480).map { Int16(truncatingIfNeeded: (n * 480 + $0) % 30000) }
        samples.withUnsafeBufferPointer { r.render($0) }
    }

    @Test("placed stream delay − lead before the newest render, then one frame per capture")
    func continuousPlacement() {
        var r = EchoReference(sampleRate: 48000)
        for n in 0..<20 { render(&r, frame: n) }   // 200 ms rendered before the microphone starts
        var starts: [Int] = []
        for n in 20..<60 {
            render(&r, frame: n)
            starts.append(Int(r.frame(streamDelaySamples: 4800)[0]))   // 100 ms
        }
        // written = 21 frames = 10080; ideal = 10080 − 4800 + 1920 − 480 = 6720.
        #expect(starts.first == 6720)
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 == 480 })
        #expect(r.resyncs == 0)
    }

    @Test("bursty threads (render 40 ms ahead, then behind) do not move the reference")
    func burstsAreAbsorbed() {
        var r = EchoReference(sampleRate: 48000)
        var next = 0
        for _ in 0..<10 { render(&r, frame: next); next += 1 }
        var starts: [Int] = []
        for step in 0..<200 {
            // Every 20 captures the render thread stalls 4 frames and then catches up.
            let stalled = step % 20 < 4
            if !stalled { render(&r, frame: next); next += 1 }
            if step % 20 == 4 { for _ in 0..<4 { render(&r, frame: next); next += 1 } }
            _ = r.frame(streamDelaySamples: 2400)
            starts.append(r.readPosition ?? -1)
        }
        #expect(r.resyncs == 0)
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 == 480 })
    }

    @Test("a lasting drift re-places the reference once; a jump at once")
    func driftAndJump() {
        var r = EchoReference(sampleRate: 48000, patienceFrames: 30)
        var next = 0
        for _ in 0..<10 { render(&r, frame: next); next += 1 }
        for _ in 0..<50 { render(&r, frame: next); next += 1; _ = r.frame(streamDelaySamples: 2400) }
        // The render side now runs 5 frames (50 ms) further ahead for good: after 30 frames of
        // patience, one resync.
        for _ in 0..<5 { render(&r, frame: next); next += 1 }
        for _ in 0..<40 { render(&r, frame: next); next += 1; _ = r.frame(streamDelaySamples: 2400) }
        #expect(r.resyncs == 1)
        // The reported delay jumps by 200 ms: re-placed with the next frame.
        render(&r, frame: next); next += 1
        _ = r.frame(streamDelaySamples: 2400 + 9600)
        #expect(r.resyncs == 2)
    }

    @Test("nothing rendered yet, or asked beyond what was rendered: silence")
    func silenceOutsideTheHistory() {
        var r = EchoReference(sampleRate: 48000)
        #expect(!r.hasReference)
        render(&r, frame: 0)
        let first = r.frame(streamDelaySamples: 48000)   // 1 s ago: before anything was rendered
        #expect(first.allSatisfy { $0 == 0 })
    }
}
