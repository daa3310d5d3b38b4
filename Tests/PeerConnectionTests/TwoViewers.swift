import Locks
@testable import PeerConnection
import Relay
import RTP
import SessionSupport
import Transport

/// Two receive-only video players (VP8 unless `codec`) of `stream` through `relay` (WHEP): A on
/// a clean link and B on one the test shapes (`bLink`). Each records what arrives with `record`
/// (the packet and the simulated instant it arrived).
struct TwoViewers<Arrival: Sendable> {
    let pcs: [PeerConnection]
    let views: [Locked<[Arrival]>]
    let bLink: VirtualEndpoint

    init(_ sim: Simulation, relay: RelayServer, stream: String, codec: RtpCodecCapability = .vp8,
         record: @escaping @Sendable (RTPPacket, ContinuousClock.Instant) -> Arrival) async throws {
        let bLink = Holder<VirtualEndpoint>()
        var views: [Locked<[Arrival]>] = []
        var pcs: [PeerConnection] = []
        for weak in [false, true] {
            let holder = weak ? bLink : Holder<VirtualEndpoint>()
            let pc = try sim.peer({ $0.mediaPipeline = false }, endpoint: { holder.value = $0 })
            let video = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [codec])
            let got = Locked<[Arrival]>([])
            video.receiver.onRTP = { [loop = sim.loop] p in
                let arrival = record(p, loop.now)
                got.withLock { $0.append(arrival) }
            }
            _ = try await sim.exchange(relay, pc, endpoint: "whep", stream: stream)
            views.append(got)
            pcs.append(pc)
        }
        guard let link = bLink.value else { throw SimulationError("B's endpoint was not made") }
        (self.pcs, self.views, self.bLink) = (pcs, views, link)
    }

    func close() async {
        for pc in pcs { await pc.close() }
    }
}
