import STUN
import Synchronization
import Testing
@testable import Transport

/// The mux's routing decisions, driven with fake instants: which connection an address's
/// datagrams reach, and what may change that (see `UDPMux`).
@Suite struct UDPMuxTests {
    private static func check(_ username: String) -> [UInt8] {
        STUNMessage(messageClass: .request, attributes: [.username(username)]).encode()
    }
    private static let rtp: [UInt8] = [0x80] + [UInt8](repeating: 0, count: 19)
    private static let client = SocketAddress(host: "127.0.0.1", port: 40000)!

    /// A connection stand-in: verifies checks whose USERNAME ends in ":ok" (as ICE would after
    /// MESSAGE-INTEGRITY), takes media whose second byte is its `key` as authenticated.
    final class Peer {
        let endpoint: MuxEndpoint
        let key: UInt8
        var connected = true
        var got: [String] = []
        init(_ endpoint: MuxEndpoint, key: UInt8) {
            self.endpoint = endpoint
            self.key = key
            endpoint.onReceive = { [unowned self] bytes, from, _ in self.receive(Array(bytes), from: from) }
        }

        func receive(_ bytes: [UInt8], from: SocketAddress) -> Delivery {
            if bytes[0] < 4 {
                let message = try? STUNMessage(parsing: bytes)
                got.append("stun")
                guard message?.username?.hasSuffix(":ok") == true else { return .accepted }
                endpoint.addressVerified(from)
                return connected ? .authenticated : .accepted
            }
            guard bytes.count > 1, bytes[1] == key else { return .refused }
            got.append("rtp")
            return .authenticated
        }
    }

    private func withMux(_ body: @escaping @Sendable (UDPMux) throws -> Void) async throws {
        let loop = try EventLoop(name: "mux-test")
        defer { loop.shutdown() }
        try await loop.submit {
            let mux = try UDPMux(loop: loop, bind: SocketAddress(host: "127.0.0.1", port: 0)!)
            defer { mux.close() }
            try body(mux)
        }
    }

    private static func media(key: UInt8) -> [UInt8] {
        var p = rtp
        p[1] = key
        return p
    }

    private static func send(_ bytes: [UInt8], to mux: UDPMux, from: SocketAddress = client, at now: ContinuousClock.Instant) {
        bytes.withUnsafeBytes { mux.route($0, from: from, now: now) }
    }

    @Test("a check whose integrity did not verify teaches the mux nothing: the address's media stays unrouted")
    func unverifiedChecksTeachNothing() async throws {
        try await withMux { mux in
            let t0 = ContinuousClock.now
            let victim = Peer(mux.endpoint(ufrag: "vict"), key: 1)
            Self.send(Self.check("vict:garbage"), to: mux, at: t0)
            Self.send(Self.media(key: 1), to: mux, at: t0)
            #expect(victim.got == ["stun"])
            #expect(mux.unroutedDatagrams == 1)
            #expect(mux.routing(of: Self.client) == nil)
        }
    }

    @Test("an attacker's verified check from a victim's proven address only makes it a contender; the victim's media keeps its route")
    func provenAddressIsNotTakenByAClaim() async throws {
        try await withMux { mux in
            let t0 = ContinuousClock.now
            let victim = Peer(mux.endpoint(ufrag: "vict"), key: 1)
            let attacker = Peer(mux.endpoint(ufrag: "evil"), key: 2)
            Self.send(Self.check("vict:ok"), to: mux, at: t0)
            Self.send(Self.media(key: 1), to: mux, at: t0)
            // The attacker spoofs the victim's address with checks valid for its own session.
            for i in 1...50 {
                let t = t0 + .milliseconds(20 * i)
                Self.send(Self.check("evil:ok"), to: mux, at: t)
                Self.send(Self.media(key: 1), to: mux, at: t)
            }
            #expect(victim.got.filter { $0 == "rtp" }.count == 51)
            #expect(attacker.got.allSatisfy { $0 == "stun" })
            #expect(mux.routing(of: Self.client)?.owner == "vict")
            #expect(mux.routing(of: Self.client)?.contenders == ["evil"])
            // Media spoofed under the attacker's own keys reaches the attacker's session (what it
            // sends, it may receive) and takes the address; the victim's next packet takes it back.
            let t1 = t0 + .seconds(2)
            Self.send(Self.media(key: 2), to: mux, at: t1)
            #expect(mux.routing(of: Self.client)?.owner == "evil")
            Self.send(Self.media(key: 1), to: mux, at: t1)
            #expect(mux.routing(of: Self.client)?.owner == "vict")
            #expect(victim.got.filter { $0 == "rtp" }.count == 52)
            #expect(mux.unroutedDatagrams == 0)
        }
    }

    @Test("a new session's verified check from an address whose holder never proved itself there takes the address at once")
    func unprovenHolderYieldsToANewSession() async throws {
        try await withMux { mux in
            let t0 = ContinuousClock.now
            let old = Peer(mux.endpoint(ufrag: "old1"), key: 1)
            old.connected = false   // ICE passed, the handshake never finished
            let new = Peer(mux.endpoint(ufrag: "new1"), key: 2)
            Self.send(Self.check("old1:ok"), to: mux, at: t0)
            Self.send(Self.check("new1:ok"), to: mux, at: t0 + .milliseconds(100))
            Self.send(Self.media(key: 2), to: mux, at: t0 + .milliseconds(200))
            #expect(mux.routing(of: Self.client)?.owner == "new1")
            #expect(new.got == ["stun", "rtp"])
            #expect(old.got == ["stun"])
            // From another address, media nobody's check announced is dropped.
            Self.send(Self.media(key: 2), to: mux, from: SocketAddress(host: "127.0.0.1", port: 40001)!, at: t0)
            #expect(mux.unroutedDatagrams == 1)
        }
    }

    @Test("a holder silent for the hold time loses its address to a verified claim; a closed holder hands it to its contender")
    func silenceAndCloseReleaseTheAddress() async throws {
        try await withMux { mux in
            let t0 = ContinuousClock.now
            let first = Peer(mux.endpoint(ufrag: "aaaa"), key: 1)
            let second = Peer(mux.endpoint(ufrag: "bbbb"), key: 2)
            Self.send(Self.check("aaaa:ok"), to: mux, at: t0)
            Self.send(Self.check("bbbb:ok"), to: mux, at: t0 + UDPMux.holdTime - .milliseconds(1))
            #expect(mux.routing(of: Self.client)?.owner == "aaaa")
            Self.send(Self.check("bbbb:ok"), to: mux, at: t0 + UDPMux.holdTime)
            #expect(mux.routing(of: Self.client)?.owner == "bbbb")
            #expect(mux.routing(of: Self.client)?.contenders == ["aaaa"])
            second.endpoint.close()
            #expect(mux.routing(of: Self.client)?.owner == "aaaa")
            first.endpoint.close()
            #expect(mux.routing(of: Self.client) == nil)
            #expect(mux.addressTakeovers == 1)
        }
    }
}
