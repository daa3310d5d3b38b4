import Media
import PeerConnection

/// Feeds frames one at a time, each after the previous one was encoded (a debug build encodes
/// slowly and the sender drops frames while busy, by design), polling the sender's stats on the
/// wall clock: for RelayTakeoverTests, which still runs on real sockets. Moved here from
/// VideoOrientationTests, which runs on virtual time now (`deliverFrames`); on a `Simulation`
/// peer (inline codecs) each frame is encoded before `deliverCapturedFrame` returns, so the
/// poll ends at once. Delete once nothing calls it.
func sendFrames(_ frames: [VideoFrame], into source: VideoSource, from pc: PeerConnection, alreadyEncoded: Int = 0) async throws {
    for (i, frame) in frames.enumerated() {
        source.deliverCapturedFrame(frame)
        let end = ContinuousClock.now.advanced(by: .seconds(5))
        while ContinuousClock.now < end,
              (await pc.getStats().ofType("outbound-rtp").first?.int("framesEncoded") ?? 0) <= alreadyEncoded + i {
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
