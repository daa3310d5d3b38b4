/// The far end as the echo canceller needs it: a continuous reference stream, each capture frame
/// paired with the reference its echo lags by a little. Render frames are appended as they go
/// to the speaker; for a capture frame the ideal start is `stream delay − lead` before the newest
/// render sample (the echo of what was rendered D ago is in this capture frame; `lead` keeps the
/// pairing on the causal side when the reported delay is short). Once placed, the read position
/// advances one frame per capture frame and is moved only when it stays more than `slack` from
/// the ideal for `patienceFrames` (threads that write and read in bursts under load look
/// drifted for a moment; a filter fed a jumping reference has to re-learn), or at once when it
/// is off by more than `jumpMs`. Sample counts only: no clock.
struct EchoReference {
    let frameSize: Int
    let leadSamples: Int
    let slackSamples: Int
    let jumpSamples: Int
    let patienceFrames: Int
    private var driftedFrames = 0
    private var history: [Int16] = []
    /// Absolute index of history[0].
    private var historyStart = 0
    private var written = 0
    private(set) var readPosition: Int?
    private(set) var resyncs = 0

    init(sampleRate: Int, leadMs: Int = 40, slackMs: Int = 30, jumpMs: Int = 150, patienceFrames: Int = 30) {
        frameSize = sampleRate / 100
        leadSamples = sampleRate * leadMs / 1000
        slackSamples = sampleRate * slackMs / 1000
        jumpSamples = sampleRate * jumpMs / 1000
        self.patienceFrames = patienceFrames
    }

    var hasReference: Bool { written > 0 }

    mutating func render(_ samples: UnsafeBufferPointer<Int16>) {
        history.append(contentsOf: samples)
        written += samples.count
        // Keep about a second: the longest stream delay the processor accepts is 500 ms.
        let keep = frameSize * 100
        if history.count > keep * 2 {
            let drop = history.count - keep
            history.removeFirst(drop)
            historyStart += drop
        }
    }

    /// The reference frame for the next capture frame, given the stream delay in samples.
    mutating func frame(streamDelaySamples: Int) -> [Int16] {
        let ideal = min(written - frameSize, written - streamDelaySamples + leadSamples - frameSize)
        var position = readPosition.map { $0 + frameSize } ?? ideal
        let drift = abs(position - ideal)
        driftedFrames = drift > slackSamples ? driftedFrames + 1 : 0
        if readPosition == nil || drift > jumpSamples || driftedFrames >= patienceFrames {
            if readPosition != nil { resyncs += 1 }
            position = ideal
            driftedFrames = 0
        }
        readPosition = position
        var out = [Int16](repeating: 0, count: frameSize)
        for i in 0..<frameSize {
            let index = position + i - historyStart
            if index >= 0, index < history.count { out[i] = history[index] }
        }
        return out
    }

    /// Samples between the reference given to the canceller and the newest one rendered.
    var referenceAgeSamples: Int? { readPosition.map { written - $0 } }
}
