import STUN
import Testing
@testable import Transport

/// The shared socket's routing decisions on fake instants: which connection an address's
/// datagrams reach, and what may change that (see `MuxRouter`). Connections are modelled on
/// `MediaTransport`'s rules (`ModelConnection`).
@Suite struct MuxRouterTests {
    private let client = SocketAddress(host: "127.0.0.1", port: 40000)!
    private let t0 = ContinuousClock.now

    private func send(_ router: MuxRouter<ModelConnection>, _ bytes: [UInt8], from: SocketAddress? = nil,
                      at now: ContinuousClock.Instant) {
        bytes.withUnsafeBytes { router.route($0, from: from ?? client, now: now) }
    }

    @Test("a check whose integrity did not verify teaches the router nothing: the address's media stays unrouted")
    func unverifiedChecksTeachNothing() {
        let router = MuxRouter<ModelConnection>()
        let victim = ModelConnection(ufrag: "vict", pwd: "victimvictimvictimvictim", key: 1, router: router)
        send(router, victim.check(valid: false), at: t0)
        send(router, victim.media(), at: t0)
        #expect(victim.log == ["stun"])
        #expect(router.unroutedDatagrams == 1)
        #expect(router.routing(of: client) == nil)
    }

    @Test("an attacker's valid checks for its own session from a victim's proven address only make it a contender")
    func provenAddressIsNotTakenByAClaim() {
        let router = MuxRouter<ModelConnection>()
        let victim = ModelConnection(ufrag: "vict", pwd: "victimvictimvictimvictim", key: 1, router: router)
        let attacker = ModelConnection(ufrag: "evil", pwd: "evilevilevilevilevilevil", key: 2, router: router)
        send(router, victim.check(), at: t0)
        send(router, victim.media(), at: t0)
        for i in 1...50 {
            let t = t0 + .milliseconds(20 * i)
            send(router, attacker.check(), at: t)
            send(router, victim.media(), at: t)
        }
        #expect(victim.mediaCount == 51)
        #expect(attacker.log.allSatisfy { $0 == "stun" })
        #expect(router.routing(of: client)?.owner == "vict")
        #expect(router.routing(of: client)?.contenders == ["evil"])
        // Media spoofed under the attacker's own keys reaches the attacker's session (what it
        // sends, it may receive) and takes the address; the victim's next packet takes it back.
        send(router, attacker.media(), at: t0 + .seconds(2))
        #expect(router.routing(of: client)?.owner == "evil")
        send(router, victim.media(), at: t0 + .seconds(2))
        #expect(router.routing(of: client)?.owner == "vict")
        #expect(victim.mediaCount == 52)
        #expect(router.unroutedDatagrams == 0)
    }

    @Test("sessions an attacker opens later cannot push the first claimant out: its media keeps arriving")
    func firstComeKeepsItsPlace() {
        let router = MuxRouter<ModelConnection>()
        let victim = ModelConnection(ufrag: "vict", pwd: "victimvictimvictimvictim", key: 1, router: router)
        let attackers = (0..<20).map { ModelConnection(ufrag: "ev\($0)", pwd: "evilevilevilevilevilevil", key: UInt8(10 + $0), router: router) }
        send(router, victim.check(), at: t0)
        for (i, attacker) in attackers.enumerated() {
            let t = t0 + .milliseconds(10 * i)
            send(router, attacker.check(), at: t)
            send(router, attacker.media(), at: t)
            send(router, victim.media(), at: t)
        }
        #expect(victim.mediaCount == 20)
        #expect(router.routing(of: client)?.contenders.count == MuxRouterLimits.maxContenders)
    }

    @Test("a new session's verified check from an address whose holder never proved itself there takes it at once")
    func unprovenHolderYieldsToANewSession() {
        let router = MuxRouter<ModelConnection>()
        let old = ModelConnection(ufrag: "old1", pwd: "oldoldoldoldoldoldoldold", key: 1, router: router)
        old.connected = false   // ICE passed, the handshake never finished
        let new = ModelConnection(ufrag: "new1", pwd: "newnewnewnewnewnewnewnew", key: 2, router: router)
        send(router, old.check(), at: t0)
        send(router, new.check(), at: t0 + .milliseconds(100))
        send(router, new.media(), at: t0 + .milliseconds(200))
        #expect(router.routing(of: client)?.owner == "new1")
        #expect(new.log == ["stun", "media"])
        #expect(old.log == ["stun"])
        // From another address, media nobody's check announced is dropped.
        send(router, new.media(), from: SocketAddress(host: "127.0.0.1", port: 40001)!, at: t0)
        #expect(router.unroutedDatagrams == 1)
    }

    @Test("a holder silent for the hold time loses its address to a verified claim; a closed holder hands it on")
    func silenceAndCloseReleaseTheAddress() {
        let router = MuxRouter<ModelConnection>()
        let first = ModelConnection(ufrag: "aaaa", pwd: "aaaaaaaaaaaaaaaaaaaaaaaa", key: 1, router: router)
        let second = ModelConnection(ufrag: "bbbb", pwd: "bbbbbbbbbbbbbbbbbbbbbbbb", key: 2, router: router)
        send(router, first.check(), at: t0)
        send(router, second.check(), at: t0 + MuxRouterLimits.holdTime - .milliseconds(1))
        #expect(router.routing(of: client)?.owner == "aaaa")
        send(router, second.check(), at: t0 + MuxRouterLimits.holdTime)
        #expect(router.routing(of: client)?.owner == "bbbb")
        #expect(router.routing(of: client)?.contenders == ["aaaa"])
        router.remove(second)
        #expect(router.routing(of: client)?.owner == "aaaa")
        router.remove(first)
        #expect(router.routing(of: client) == nil)
        #expect(router.addressTakeovers == 1)
    }

    @Test("the fuzz target's invariants hold for a hand-made attack")
    func fuzzEntryRuns() {
        // op, address, …: victim check, attacker 1 checks and spoofs media from the victim's
        // address, time passes, victim media, garbage, victim media.
        fuzzMuxRouting([0, 0, 0x12, 0, 0x14, 0, 6, 200, 1, 0, 5, 0, 3, 0x80, 1, 2, 1, 0])
    }
}
