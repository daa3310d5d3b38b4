import STUN

/// Fuzzing entry point (libFuzzer: `-sanitize=fuzzer`): whatever a TURN server sends, to an
/// allocated client with a bound channel, as datagrams and as a TCP stream, never traps.
public func fuzzTURN(_ bytes: [UInt8]) {
    let now = ContinuousClock.now
    let server = SocketAddress(ip: .v4(0x7f00_0001), port: 3478)
    let peer = SocketAddress(ip: .v4(0x7f00_0001), port: 5000)
    let client = TURNClient(configuration: TURNConfiguration(server: server, username: "u", password: "p"))
    let key = LongTermCredentials.key(username: "u", realm: "r", password: "p")
    func answer(_ build: (STUNMessage) -> STUNMessage) {
        while let request = client.pollTransmit() {
            guard let message = try? STUNMessage(parsing: request), message.messageClass == .request else { continue }
            client.handleDatagram(build(message).encode(integrityKey: message.messageIntegrity == nil ? nil : key), now: now)
        }
    }
    client.start(now: now)
    answer { STUNMessage(method: $0.method, messageClass: .errorResponse, transactionID: $0.transactionID,
                         attributes: [.errorCode(code: 401, reason: "Unauthorized"), .realm("r"), .nonce("n")]) }
    answer { STUNMessage(method: $0.method, messageClass: .successResponse, transactionID: $0.transactionID,
                         attributes: [.xorRelayedAddress(peer), .lifetime(600)]) }
    client.send([1], to: peer, now: now)
    answer { STUNMessage(method: $0.method, messageClass: .successResponse, transactionID: $0.transactionID) }

    client.handleDatagram(bytes, now: now)
    var framer = TURNStreamFramer()
    if let frames = try? framer.append(bytes) {
        for frame in frames { client.handleDatagram(frame, now: now) }
    }
    if let deadline = client.pollTimeout() { client.handleTimeout(now: deadline) }
    while client.pollTransmit() != nil {}
    while client.pollEvent() != nil {}
}
