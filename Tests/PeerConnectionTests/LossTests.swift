import Capture
import Foundation
import Media
import PeerConnection
import STUN
import Synchronization
import Testing
import Transport

/// Drops a share of the RTP/RTCP datagrams a connection receives (never STUN or DTLS, so the
/// connection comes up the same way every time), with a fixed seed.
final class LossyPacketIO: PacketIO {
    private let inner: PacketIO
    private var state: UInt64
    private let dropPercent: UInt64
    private(set) var dropped = 0
    var onReceive: ((UnsafeRawBufferPointer, SocketAddress, SocketAddress) -> Delivery)? {
        didSet {
            inner.onReceive = { [unowned self] bytes, from, local in
                if let first = bytes.first, first >= 128, first < 192, self.nextPercent() < self.dropPercent {
                    self.dropped += 1
                    return .refused
                }
                return self.onReceive?(bytes, from, local) ?? .refused
            }
        }
    }

    init(_ inner: PacketIO, dropPercent: UInt64, seed: UInt64) {
        self.inner = inner
        self.dropPercent = dropPercent
        self.state = seed
    }

    private func nextPercent() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407   // LCG: deterministic per seed
        return (state >> 33) % 100
    }

    var localAddresses: [SocketAddress] { inner.localAddresses }
    func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool {
        inner.send(bytes, from: local, to: remote)
    }
    func close() { inner.close() }
}

@Suite("Media under packet loss")
struct LossTests {
    @Test("10% loss on the receiver's way in: NACKs recover the packets, frames decode in order")
    func nackRecoversLoss() async throws {
        let a = try loopbackPeer()
        var config = PeerConnection.Configuration()
        let loopback = try #require(SocketAddress(host: "127.0.0.1", port: 0))
        config.interfaceAddresses = [loopback]
        let b = try PeerConnection(configuration: config, loop: EventLoop(name: "lossy")) { loop, _ in
            LossyPacketIO(try SocketSet(loop: loop, addresses: [loopback]), dropPercent: 10, seed: 7)
        }
        let source = VideoSource()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.vp8])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try encodeEveryFrame(t.sender)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        let log = FrameLog()
        try #require(b.transceivers.first?.receiver.videoTrack).addRenderer(log)
        let capturer = TestPatternCapturer(delegate: source)
        for i in 0..<40 {
            capturer.captureFrame(at: Int64(i) * 33_333_333, width: 640, height: 360)
            let end = ContinuousClock.now.advanced(by: .seconds(5))
            while ContinuousClock.now < end, (await a.getStats().ofType("outbound-rtp").first?.int("framesEncoded") ?? 0) <= i {
                try await Task.sleep(for: .milliseconds(2))
            }
            try await Task.sleep(for: .milliseconds(10))   // room for NACK round trips
        }
        await log.wait(for: 38, timeout: .seconds(5))
        let numbers = log.all.compactMap(\.number)
        #expect(numbers.count >= 38, "decoded \(numbers.count) of 40 frames")
        #expect(numbers == numbers.sorted())
        let inbound = try #require(await b.getStats().ofType("inbound-rtp").first)
        #expect(inbound.int("nackCount") ?? 0 > 0, "no NACK was sent: \(inbound.values)")
        let outbound = try #require(await a.getStats().ofType("outbound-rtp").first)
        #expect(outbound.int("retransmittedPacketsSent") ?? 0 > 0)
        // Both sides negotiated rtx: the repairs travel on the RTX stream (RFC 4588) and are
        // unwrapped into the frames above.
        let transport = try #require(await b.getStats().ofType("transport").first)
        #expect(transport.int("rtxPacketsReceived") ?? 0 > 0, "no RTX packet arrived: \(transport.values)")
        #expect(inbound.int("retransmittedPacketsReceived") ?? 0 > 0)
        #expect(inbound.int("jitterBufferEmittedCount") ?? 0 >= 38)
        #expect(inbound.double("jitterBufferDelay") ?? 0 > 0)
        await a.close()
        await b.close()
    }
}
