import Capture
import Media
import SessionSupport

/// Test-pattern frames into a source in virtual time: each step delivers the next numbered frame
/// (numbers count on across sources, as one camera's would), then moves the simulation's clock
/// on by one frame interval. Time moves only through it while media should flow, so the
/// receiver sees frames every interval except where the session itself stalls.
final class PatternFeed {
    let sim: Simulation
    var source: VideoSource
    let width: Int, height: Int
    let interval: Duration
    private let capturer = TestPatternCapturer()
    /// Frames delivered so far (the next one carries this number).
    private(set) var sent = 0

    init(_ sim: Simulation, into source: VideoSource, width: Int = 320, height: Int = 180, interval: Duration = .milliseconds(33)) {
        self.sim = sim
        self.source = source
        self.width = width
        self.height = height
        self.interval = interval
    }

    /// One frame, then one interval of virtual time.
    func step() {
        deliver()
        sim.advance(by: interval)
    }

    /// The next numbered frame, now.
    func deliver() {
        let ns = interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000
        source.deliverCapturedFrame(capturer.captureFrame(at: Int64(sent) * ns, width: width, height: height))
        sent += 1
    }

    func run(for duration: Duration) {
        var spent = Duration.zero
        while spent < duration {
            step()
            spent += interval
        }
    }

    /// Steps until `condition` holds, at most `budget` of virtual time; whether it holds.
    func run(within budget: Duration, until condition: () -> Bool) -> Bool {
        var spent = Duration.zero
        while !condition() {
            guard spent < budget else { return false }
            step()
            spent += interval
        }
        return true
    }

    /// The same for a condition only an async call reads (statistics).
    func run(within budget: Duration, untilAsync condition: () async -> Bool) async -> Bool {
        var spent = Duration.zero
        while !(await condition()) {
            guard spent < budget else { return false }
            step()
            spent += interval
        }
        return true
    }
}
