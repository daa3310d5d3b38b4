import HTTP
import Relay
import Signaling
import Streaming
import Transport

extension Simulation {
    /// A host at a fresh address (its connections share its access link).
    public func host() -> SimulatedHost {
        SimulatedHost(network: network, address: nextAddress())
    }

    /// Where a `StreamingSession` runs on this simulation: its connections on `host`, its
    /// signaling served by `relay` in process (whatever host the URL names), its signaling work
    /// counted by `activity` (see `run(_:within:until:)`), its backoff jitter from `seed`.
    public func environment(host: SimulatedHost, relay: RelayServer, activity: SignalingActivity,
                            seed: UInt64 = 1) -> SessionEnvironment {
        var environment = SessionEnvironment()
        environment.loop = loop
        environment.packetIO = host.packetIO
        environment.activity = activity
        environment.seed = seed
        let client = "\(host.address.host):40000"
        environment.exchange = { [self] request in
            let target = Self.target(of: request.url)
            let response = await self.request(relay, request.method, target, body: request.body, headers: request.headers, client: client)
            return HTTPClientResponse(status: response.status, reason: response.reason, headers: response.headers,
                                      body: response.body, finalURL: request.url)
        }
        return environment
    }

    /// `/path?query` of an absolute URL.
    static func target(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        return rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
    }

    /// Moves virtual time until `condition` holds or `budget` is spent, as `run(within:until:)`,
    /// but never while `activity` has signaling in flight: that work waits on no clock, so it
    /// finishes at the instant it began, as a real exchange nearly does, and the run is exact.
    @discardableResult
    public func run(_ activity: SignalingActivity, within budget: Duration, until condition: () -> Bool) async -> Bool {
        let end = loop.now + budget
        while true {
            await settle(activity)
            if condition() { return true }
            guard loop.now < end else { return false }
            _ = run(within: end - loop.now) { condition() || !activity.isIdle }
        }
    }

    /// Exactly `duration` of virtual time, pausing while signaling is in flight.
    public func advance(_ activity: SignalingActivity, by duration: Duration) async {
        await run(activity, within: duration) { false }
    }

    /// Waits, yielding, until no signaling work is in flight (it runs on other threads). Yields
    /// once even when idle: a long run would otherwise never suspend and hold one of the few
    /// threads of the concurrency pool, starving other suites' tasks (HTTP handlers) for seconds.
    public func settle(_ activity: SignalingActivity) async {
        repeat { await Task.yield() } while !activity.isIdle
    }
}
