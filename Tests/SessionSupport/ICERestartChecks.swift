import Foundation
import PeerConnection

/// Whether the transport has a selected, nominated pair that checks after an ICE restart proved
/// (it has answered or asked at least once since).
public func restartedPairSelected(_ pc: PeerConnection) async -> Bool {
    let report = await pc.getStats()
    guard case .string(let id)? = report.ofType("transport").first?["selectedCandidatePairId"],
          let pair = report.stats[id] else { return false }
    return pair["nominated"] == .bool(true) && (pair.int("responsesReceived") ?? 0) + (pair.int("requestsReceived") ?? 0) > 0
}

/// The `a=ice-ufrag` line of the local description.
public func iceUfrag(_ pc: PeerConnection) -> String? {
    pc.localDescription?.sdp.components(separatedBy: "\r\n").first { $0.hasPrefix("a=ice-ufrag:") }
}
