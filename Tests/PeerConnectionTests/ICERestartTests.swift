import Capture
import Foundation
import Media
import PeerConnection
import Synchronization
import Testing

/// When each decoded frame arrived.
final class ArrivalLog: VideoRenderer, Sendable {
    private let times = Mutex<[ContinuousClock.Instant]>([])
    func render(_ frame: VideoFrame) { times.withLock { $0.append(.now) } }
    var all: [ContinuousClock.Instant] { times.withLock { $0 } }
    /// The longest time without a frame between `start` and `end`.
    func longestGap(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Duration {
        let inside = [start] + all.filter { $0 > start && $0 < end } + [end]
        return zip(inside, inside.dropFirst()).map { $1 - $0 }.max() ?? .zero
    }
}

/// Test-pattern frames into `source`, 320x180 at ~30 fps on real time, until cancelled.
func feedPattern(_ source: VideoSource) -> Task<Void, Never> {
    let capturer = TestPatternCapturer(delegate: source)
    return Task {
        var i: Int64 = 0
        while !Task.isCancelled {
            capturer.captureFrame(at: i * 33_333_333, width: 320, height: 180)
            i += 1
            try? await Task.sleep(for: .milliseconds(33))
        }
    }
}

func iceUfrag(_ pc: PeerConnection) -> String? {
    pc.localDescription?.sdp.components(separatedBy: "\r\n").first { $0.hasPrefix("a=ice-ufrag:") }
}

/// Whether the transport has a selected, nominated pair that the checks after a restart proved.
func restartedPairSelected(_ pc: PeerConnection) async -> Bool {
    let report = await pc.getStats()
    guard case .string(let id)? = report.ofType("transport").first?["selectedCandidatePairId"],
          let pair = report.stats[id] else { return false }
    return pair["nominated"] == .bool(true) && (pair.int("responsesReceived") ?? 0) + (pair.int("requestsReceived") ?? 0) > 0
}

@Suite("ICE restart")
struct ICERestartTests {
    enum Case: CaseIterable { case offererRestarts, answererRestarts, liteAnswerer }

    @Test("restart mid-call from either side (or against a lite answerer): new credentials, same DTLS, frames keep coming (freeze ≤ 1 s)",
          arguments: Case.allCases)
    func restartMidCall(_ c: Case) async throws {
        let a = try loopbackPeer(), b = try loopbackPeer { $0.iceLite = c == .liteAnswerer }
        let offererRestarts = c != .answererRestarts
        let source = VideoSource()
        let sender = try await a.addTrack(VideoTrack(id: "v", source: source), codecs: [.vp8])
        try encodeEveryFrame(sender)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        let log = ArrivalLog()
        try #require(b.transceivers.first?.receiver.videoTrack).addRenderer(log)
        let feeding = feedPattern(source)
        defer { feeding.cancel() }
        #expect(await eventually { log.all.count >= 10 })

        let (restarter, other) = offererRestarts ? (a, b) : (b, a)
        let events = EventLog(restarter), otherEvents = EventLog(other)
        let before = (iceUfrag(a), iceUfrag(b))
        let start = ContinuousClock.now
        restarter.restartIce()
        #expect(await eventually { events.negotiationNeeded == 1 })
        try await renegotiate(restarter, other)
        #expect(iceUfrag(a) != before.0, "the offerer took new credentials")
        // A lite agent keeps its own (its shared port finds sessions by ufrag); checks restart anyway.
        #expect((iceUfrag(b) == before.1) == (c == .liteAnswerer))
        let framesAtRestart = log.all.count
        // Checks with the new credentials select (and nominate) a pair again on both sides.
        for pc in [a, b] { #expect(await eventually { await restartedPairSelected(pc) }) }
        try await Task.sleep(for: .milliseconds(1500))
        let end = ContinuousClock.now
        #expect(log.all.count >= framesAtRestart + 20, "frames decoded after the restart: \(log.all.count - framesAtRestart)")
        #expect(log.longestGap(from: start, to: end) <= .seconds(1), "freeze \(log.longestGap(from: start, to: end))")
        // DTLS and SRTP ran on: no new handshake, no state change, no SRTP failures.
        for (pc, log) in [(restarter, events), (other, otherEvents)] {
            #expect(pc.connectionState == .connected)
            #expect(!log.all.contains { if case .connectionStateChanged = $0 { return true }; return false })
            #expect(await pc.transportStatistics()["srtpErrors"] == 0)
        }
        await a.close()
        await b.close()
    }

    @Test("a restart offer rolled back is still to negotiate; the next offer completes it")
    func restartRolledBack() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        try await a.addTransceiver(.audio)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        let events = EventLog(a)
        a.restartIce()
        try await a.setLocalDescription()
        events.clear()
        try await a.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
        #expect(await eventually { events.negotiationNeeded == 1 })
        try await renegotiate(a, b)
        for pc in [a, b] { #expect(await eventually { await restartedPairSelected(pc) }) }
        #expect(a.connectionState == .connected && b.connectionState == .connected)
        await a.close()
        await b.close()
    }
}
