import STUN
import Synchronization
import Testing
@testable import Transport

@Suite struct UDPMuxTests {
    private func check(_ username: String) -> [UInt8] {
        STUNMessage(messageClass: .request, attributes: [.username(username)]).encode()
    }

    @Test("a new session's check from an address an old session had goes to the new session")
    func stunRoutesByUfragOverAddress() async throws {
        let loop = try EventLoop(name: "mux-test")
        defer { loop.shutdown() }
        let got = Mutex<[String]>([])
        try await loop.submit {
            let mux = try UDPMux(loop: loop, bind: SocketAddress(host: "127.0.0.1", port: 0)!)
            defer { mux.close() }
            let old = mux.endpoint(ufrag: "old1"), new = mux.endpoint(ufrag: "new1")
            old.onReceive = { b, _, _ in got.withLock { $0.append("old:\(b.first ?? 0)") } }
            new.onReceive = { b, _, _ in got.withLock { $0.append("new:\(b.first ?? 0)") } }
            let client = SocketAddress(host: "127.0.0.1", port: 40000)!
            let rtp: [UInt8] = [0x80] + [UInt8](repeating: 0, count: 19)
            for bytes in [self.check("old1:c"), rtp, self.check("new1:c"), rtp, [0x99]] {
                bytes.withUnsafeBytes { mux.route($0, from: client) }
            }
            // From another address, media nobody's check announced is dropped.
            rtp.withUnsafeBytes { mux.route($0, from: SocketAddress(host: "127.0.0.1", port: 40001)!) }
            #expect(mux.unroutedDatagrams == 1)
        }
        #expect(got.withLock { $0 } == ["old:0", "old:128", "new:0", "new:128", "new:153"])
    }
}
