import Testing
@testable import RTPMedia

@Suite struct QuietFrameRemovalTests {
    @Test("a requested cut waits for a quiet frame; loud frames always play")
    func cutLandsOnTheNextQuietFrame() {
        var r = QuietFrameRemoval()
        let loud = 0.05, silent = 0.0
        do { let removed = r.shouldRemove(requested: false, power: loud); #expect(!removed) }
        do { let removed = r.shouldRemove(requested: true, power: loud); #expect(!removed) }   // asked during a click: kept
        do { let removed = r.shouldRemove(requested: false, power: loud); #expect(!removed) }
        #expect(r.pending == 1)
        do { let removed = r.shouldRemove(requested: false, power: silent); #expect(removed) }  // the pause takes the cut
        #expect(r.pending == 0 && r.framesRemoved == 1)
        do { let removed = r.shouldRemove(requested: false, power: silent); #expect(!removed) } // nothing more asked for
    }

    @Test("background noise 26 dB under the recent level counts as a pause")
    func relativeQuiet() {
        var r = QuietFrameRemoval()
        for _ in 0..<100 { _ = r.shouldRemove(requested: false, power: 0.1) }
        do { let removed = r.shouldRemove(requested: true, power: 0.01); #expect(!removed) }    // 10 dB down: still speech
        do { let removed = r.shouldRemove(requested: false, power: 0.0002); #expect(removed) }  // ~27 dB down, above −40 dBFS
    }

    @Test("no pause for a while: the cut is abandoned rather than cutting into sound")
    func givesUp() {
        var r = QuietFrameRemoval()
        r.giveUpFrames = 10
        do { let removed = r.shouldRemove(requested: true, power: 0.05); #expect(!removed) }
        for _ in 0..<9 { do { let removed = r.shouldRemove(requested: false, power: 0.05); #expect(!removed) } }
        #expect(r.pending == 0)
        do { let removed = r.shouldRemove(requested: false, power: 0); #expect(!removed) }
        #expect(r.framesRemoved == 0)
    }
}
