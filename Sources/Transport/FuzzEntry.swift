import STUN

/// A connection as the mux sees it, modelled on `MediaTransport`'s rules: a STUN check verifies
/// when its USERNAME names our ufrag and its MESSAGE-INTEGRITY verifies with our password, and
/// then claims its source address; non-STUN from an address we never verified is refused; media
/// authenticates when it carries our key (SRTP's role) in its second byte. For the router's
/// tests and its fuzz target.
final class ModelConnection: MuxRoutable {
    let ufrag: String
    let pwd: String
    let key: UInt8
    var connected = true
    weak var router: MuxRouter<ModelConnection>?
    private(set) var verified: Set<SocketAddress> = []
    private(set) var claimed: Set<SocketAddress> = []
    /// What reached us: "stun", or "media" for authenticated media.
    private(set) var log: [String] = []
    /// Non-STUN handed to us from an address we never claimed: the router's bug, never allowed.
    private(set) var strayDeliveries = 0

    init(ufrag: String, pwd: String, key: UInt8, router: MuxRouter<ModelConnection>) {
        self.ufrag = ufrag
        self.pwd = pwd
        self.key = key
        self.router = router
        router.add(self)
    }

    var mediaCount: Int { log.count { $0 == "media" } }

    func deliver(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) -> Delivery {
        let data = Array(bytes)
        if let first = data.first, first < 4 {
            log.append("stun")
            guard let message = try? STUNMessage(parsing: data), let username = message.username,
                  username.split(separator: ":", maxSplits: 1).first.map(String.init) == ufrag,
                  STUNMessage.verifyIntegrity(data, key: Array(pwd.utf8)) else { return .accepted }
            verified.insert(from)
            claimed.insert(from)
            router?.claim(from, for: self, now: now)
            return connected ? .authenticated : .accepted
        }
        if !claimed.contains(from) { strayDeliveries += 1 }
        guard verified.contains(from), data.count > 1, data[1] == key else { return .refused }
        log.append("media")
        return .authenticated
    }

    /// A nominating check this connection's peer would send (valid integrity when `valid`).
    func check(valid: Bool = true) -> [UInt8] {
        STUNMessage(messageClass: .request, attributes: [.username("\(ufrag):peer")])
            .encode(integrityKey: Array((valid ? pwd : "garbage-garbage-garbage!").utf8), fingerprint: true)
    }

    /// Media this connection's peer would send (authenticates only here).
    func media(_ n: UInt8 = 0) -> [UInt8] {
        [0x80, key] + [UInt8](repeating: n, count: 18)
    }
}

/// Fuzzing entry point for the shared socket's routing decision. A victim's peer at one address
/// sends valid checks and media; an attacker with sessions of its own sends anything from any
/// address, the victim's included (spoofing), but knows only its own credentials; it learns the
/// victim's address only after the victim's first check. Invariants: no connection is handed
/// non-STUN from an address it did not claim, and every packet of the victim's media reaches it.
public func fuzzMuxRouting(_ bytes: [UInt8]) {
    let router = MuxRouter<ModelConnection>()
    let victim = ModelConnection(ufrag: "vict", pwd: "victimvictimvictimvictim", key: 1, router: router)
    let attackers = (0..<12).map { i in
        ModelConnection(ufrag: "att\(i)", pwd: "attackerattackerattacker", key: UInt8(10 + i), router: router)
    }
    let addresses = (0..<4).map { SocketAddress(ip: .v4(0x7f00_0001), port: UInt16(40000 + $0)) }
    let victimAddress = addresses[0]
    var now = ContinuousClock.Instant.now
    var victimSent = 0
    var i = 0
    func next() -> UInt8 {
        defer { i += 1 }
        return i < bytes.count ? bytes[i] : 0
    }
    func send(_ datagram: [UInt8], from address: SocketAddress) {
        datagram.withUnsafeBytes { router.route($0, from: address, now: now) }
    }
    // The victim's peer connects before an attacker can know its address.
    send(victim.check(), from: victimAddress)
    while i < bytes.count {
        let op = next()
        let address = addresses[Int(next()) % addresses.count]
        let attacker = attackers[Int(op >> 4) % attackers.count]
        switch op % 8 {
        case 0: send(victim.check(), from: victimAddress)
        case 1:
            send(victim.media(UInt8(truncatingIfNeeded: victimSent)), from: victimAddress)
            victimSent += 1
        case 2: send(attacker.check(), from: address)
        case 3: send(victim.check(valid: false), from: address)
        case 4: send(attacker.media(), from: address)
        case 5:
            let count = Int(next()) % 64
            send((0..<count).map { _ in next() }, from: address)
        case 6: now = now.advanced(by: .milliseconds(Int64(next()) * 100))
        default: attacker.connected.toggle()
        }
    }
    for c in [victim] + attackers {
        precondition(c.strayDeliveries == 0, "fuzzMuxRouting: \(c.ufrag) got non-STUN from an address it never claimed")
    }
    precondition(victim.mediaCount >= victimSent, "fuzzMuxRouting: the victim got \(victim.mediaCount) of its \(victimSent) media packets")
}
