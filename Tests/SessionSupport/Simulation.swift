import Foundation
import HTTP
import PeerConnection
import Relay
import SeededRandom
import STUN
import Transport

/// Whole sessions in process on simulated time: peers (and a relay) on one simulated
/// `EventLoop`, their datagrams on a `VirtualNetwork` with whatever loss, delay and rate a test
/// sets, codecs inline. Nothing waits on the wall clock: a test moves virtual time with
/// `run(until:within:)` / `advance(by:)`, and the same seed replays the same run.
public final class Simulation: @unchecked Sendable {
    // @unchecked: a test uses it from its own task; everything it touches runs as loop work.
    public let loop: EventLoop
    public let network: VirtualNetwork
    private var hosts: UInt32 = 0
    /// Each peer's `timingSeed`, drawn in the order peers are made.
    private var peerSeeds: SplitMix64

    public init(seed: UInt64 = 1) {
        loop = EventLoop.simulated(name: "simulation")
        network = VirtualNetwork(loop: loop, seed: seed)
        peerSeeds = SplitMix64(seed: ~seed)
    }

    /// A fresh host address, 10.0.0.N.
    public func nextAddress(port: UInt16 = 0) -> SocketAddress {
        hosts += 1
        return SocketAddress(ip: .v4(0x0A00_0000 | hosts), port: port)
    }

    /// A peer at its own address; `endpoint` receives its attachment (to set link conditions).
    public func peer(_ configure: (inout PeerConnection.Configuration) -> Void = { _ in },
                     endpoint: (@Sendable (VirtualEndpoint) -> Void)? = nil) throws -> PeerConnection {
        var config = PeerConnection.Configuration()
        config.codecExecution = .inline
        config.timingSeed = peerSeeds.next()
        configure(&config)
        let address = nextAddress()
        let network = network
        return try PeerConnection(configuration: config, loop: loop) { _, _ in
            let io = try network.endpoint(at: address)
            endpoint?(io)
            return io
        }
    }

    /// For `peer(_:)`: a sender that starts where its source fits. From the default 300 kbit/s
    /// start the first frames are sized down until the start probes confirm more (as libwebrtc
    /// does); tests that assert the size of every frame start above that.
    public static let fullSizeStart: @Sendable (inout PeerConnection.Configuration) -> Void = { $0.startBitrate = 2_500_000 }

    /// Moves virtual time until `condition` holds (checked as loop work) or `budget` is spent.
    @discardableResult
    public func run(within budget: Duration = .seconds(10), until condition: () -> Bool) -> Bool {
        loop.run(until: condition, within: budget)
    }

    public func advance(by duration: Duration) { loop.advance(by: duration) }

    /// Offer/answer with candidates inside the SDP (gathering on the virtual network is at once).
    public func negotiate(_ offerer: PeerConnection, _ answerer: PeerConnection,
                          editAnswer: (String) -> String = { $0 }) async throws {
        try await offerer.setLocalDescription(try await offerer.createOffer())
        try gathered(offerer)
        guard let offer = offerer.localDescription else { throw SimulationError("the offerer has no local description") }
        try await answerer.setRemoteDescription(offer)
        try await answerer.setLocalDescription(try await answerer.createAnswer())
        try gathered(answerer)
        guard let answer = answerer.localDescription else { throw SimulationError("the answerer has no local description") }
        try await offerer.setRemoteDescription(SessionDescription(type: .answer, sdp: editAnswer(answer.sdp)))
    }

    private func gathered(_ pc: PeerConnection) throws {
        guard run(within: .seconds(5), until: { pc.iceGatheringState == .complete }) else {
            throw SimulationError("ICE gathering did not complete in 5 s of virtual time")
        }
    }

    /// Runs until every peer is connected; throws with their states if that takes over `budget`.
    public func connect(_ peers: PeerConnection..., within budget: Duration = .seconds(10)) throws {
        guard run(within: budget, until: { peers.allSatisfy { $0.connectionState == .connected } }) else {
            throw SimulationError("not connected after \(budget) of virtual time: "
                                  + peers.map { "\($0.connectionState) (ICE \($0.iceConnectionState), DTLS \($0.dtlsState))" }.joined(separator: ", "))
        }
    }

    /// A relay on this loop, at its own address on the virtual network (port 8000), serving
    /// requests in process (`relay.handle`): no HTTP server, no sockets.
    public func relay(policy: AccessPolicy = .init(), takeover: Bool = false, connectTimeout: Duration = .seconds(10),
                      playerTransportCC: Bool = true, log: @escaping @Sendable (String) -> Void = { _ in }) throws -> RelayServer {
        let address = nextAddress(port: 8000)
        let mux = try loop.perform { try network.mux(at: address) }
        return try RelayServer(loop: loop, media: mux, httpPort: nil, policy: policy, connectTimeout: connectTimeout,
                               takeover: takeover, playerTransportCC: playerTransportCC, timingSeed: peerSeeds.next(), log: log)
    }
}

extension Simulation {
    /// One HTTP request to an in-process relay (its handler, without a socket), from `client`.
    public func request(_ relay: RelayServer, _ method: String, _ target: String, body: [UInt8] = [],
                        headers: HTTPHeaders = [], client: String = "10.0.0.200:40000") async -> HTTPResponse {
        let (path, queryText) = target.firstIndex(of: "?").map { (String(target[..<$0]), String(target[target.index(after: $0)...])) }
            ?? (target, "")
        let query = queryText.split(separator: "&").map { pair -> (String, String) in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts.first ?? "", parts.count > 1 ? parts[1] : "")
        }
        var all = headers
        if all["Host"] == nil { all.add("Host", "127.0.0.1") }
        return await relay.handle(HTTPRequest(method: method, target: target, path: path, query: query, headers: all,
                                              body: body, remoteAddress: client))
    }

    /// WHIP (`endpoint` "whip") or WHEP ("whep") against an in-process relay for app `live`:
    /// the offer, the relay's answer applied, connected. Returns the answer.
    @discardableResult
    /// `query` goes on the URL (`&layer=low`); `edit` changes the offer as sent (lines our
    /// PeerConnection does not write, such as a browser's simulcast).
    public func exchange(_ relay: RelayServer, _ pc: PeerConnection, endpoint: String, stream: String,
                         headers: HTTPHeaders = [], query: String = "", edit: (String) -> String = { $0 }) async throws -> String {
        try await pc.setLocalDescription(try await pc.createOffer())
        guard run(within: .seconds(5), until: { pc.iceGatheringState == .complete }), let offer = pc.localDescription?.sdp else {
            throw SimulationError("no complete offer to send")
        }
        var all = headers
        all.add("Content-Type", "application/sdp")
        let response = await request(relay, "POST", "/rtc/v1/\(endpoint)/?app=live&stream=\(stream)\(query)",
                                     body: Array(edit(offer).utf8), headers: all)
        guard response.status == 201, let answer = String(validating: response.body, as: UTF8.self) else {
            throw SimulationError("\(endpoint): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: answer))
        try connect(pc)
        return answer
    }
}

public struct SimulationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}


/// A value a closure hands out (a peer's network attachment, made when its transport starts).
public final class Holder<T>: @unchecked Sendable {
    // @unchecked: set once as loop work, read by the test after the loop has run.
    public var value: T?
    public init() {}
}
