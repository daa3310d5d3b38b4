import BandwidthEstimation
import DTLS
import ICE
import STUN
import Testing
import Transport
@testable import PeerConnection

/// The congestion controller's timers (pacer, feedback tick) may come due after the transport
/// that owned it is gone: a relay session ending with packets queued. They must find nothing
/// to send through, not read freed memory (an `unowned` reference crashed under TSan here).
@Suite struct CongestionLifetimeTests {
    @Test("pacer and feedback timers that fire after their transport is gone send nothing and do not crash")
    func timersOutliveTheirTransport() async throws {
        let loop = try EventLoop(name: "cc-lifetime")
        defer { loop.shutdown() }
        let certificate = try DTLSCertificate.generate()
        let held = try await loop.submit { () -> CongestionHandle in
            let io = try SocketSet(loop: loop, addresses: [SocketAddress(host: "127.0.0.1", port: 0)!])
            let ice = ICEAgent(role: .controlling, local: .random())
            var transport: MediaTransport? = MediaTransport(loop: loop, io: io, ice: ice, certificate: certificate, srtpBackend: .openssl)
            let controller = transport!.congestion
            // Estimating (feedback negotiated), so video is paced: a 1 Mbit/s pacer holds most of
            // 40 full packets, and the tick and pacer timers are armed.
            controller.configure(receiveExtensionIDs: [3], feedbackSSRC: 1, sendFeedback: true, sendREMB: false)
            let packet = [UInt8](repeating: 0x80, count: 1200)
            for _ in 0..<40 { controller.send(packet, transportCCID: nil, kind: .video, now: Moment(ContinuousClock.now)) }
            weak let gone = transport
            transport = nil
            io.close()
            #expect(gone == nil, "the transport should be freed with its last reference")
            return CongestionHandle(controller: controller)
        }
        // Past the pacer's next release and a few feedback ticks (real time: the loop's timers).
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { loop.schedule(at: .now.advanced(by: .milliseconds(150))) { done.resume() } }
        }
        let sent = try await loop.submit { held.controller.stats.feedbackSent }
        #expect(sent == 0)
    }
}

/// Carries the controller out of the loop closure (it is used on the loop only).
struct CongestionHandle: @unchecked Sendable {
    let controller: CongestionController
}
