import PeerConnection
import Transport

/// What a session does for its `ReconnectDriver`.
protocol Reconnectable: AnyObject, Sendable {
    /// The connection whose state the driver follows (nil while one is being replaced).
    var watchedConnection: PeerConnection? { get }
    /// Stops following the current connection at once (it is about to be replaced). Loop thread.
    func retireConnection()
    /// Restarts ICE over the session's signaling (not `force`d: only if the connection wants it).
    func restartIce(force: Bool) async -> ExchangeOutcome
    /// Replaces the connection with a new one and runs its signaling.
    func reconnect(attempt: Int) async -> ExchangeOutcome
    /// Tells the app (events, status). Loop thread.
    func report(_ event: ReconnectEvent)
}

/// Runs a `ReconnectMachine` for a session on its connections' loop: the current connection's
/// state is read every `watchInterval` (the app owns the connection's delegate and the session
/// reads its `events` off the loop, so the loop's own clock decides when a change is seen),
/// deadlines are loop timers, and signaling runs in tasks counted by the session's
/// `SignalingActivity`.
final class ReconnectDriver: @unchecked Sendable {
    // @unchecked: `machine` and the timer ids are touched only by `loop`'s work.
    let loop: EventLoop
    private let activity: SignalingActivity
    private weak var session: (any Reconnectable)?
    private let policy: ReconnectPolicy
    private let connectTimeout: Duration?
    private let canRestartIce: Bool
    private let seed: UInt64
    private var machine: ReconnectMachine?
    private var deadlineTimer: Int?
    private var watchTimer: Int?
    private var onSettled: [@Sendable (ReconnectEvent?) -> Void] = []

    static let watchInterval = Duration.milliseconds(100)

    init(loop: EventLoop, policy: ReconnectPolicy, connectTimeout: Duration?, canRestartIce: Bool, seed: UInt64?,
         activity: SignalingActivity) {
        self.loop = loop
        self.policy = policy
        self.connectTimeout = connectTimeout
        self.canRestartIce = canRestartIce
        self.seed = seed ?? UInt64.random(in: 0...UInt64.max)
        self.activity = activity
    }

    /// Begins following the session's first connection (its signaling has been done).
    func start(_ session: any Reconnectable) {
        loop.execute { [self] in
            self.session = session
            machine = ReconnectMachine(policy: policy, connectTimeout: connectTimeout, canRestartIce: canRestartIce, seed: seed,
                                       now: loop.now)
            watch()
        }
    }

    /// Waits until the first connection has connected (nil) or the session has stopped (why).
    func firstConnection() async -> String? {
        await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
            loop.execute { [self] in
                guard let machine, case .connecting = machine.phase else {
                    done.resume(returning: machine?.isStopped == false ? nil : "the session has stopped")
                    return
                }
                onSettled.append { event in
                    if case .failed(let why)? = event { done.resume(returning: why) } else { done.resume(returning: nil) }
                }
            }
        }
    }

    /// The server no longer has the session (a 404 to a PATCH).
    func sessionGone(_ why: String) {
        loop.execute { [self] in feed { $0.sessionGone(why, now: loop.now) } }
    }

    /// The connection wants an ICE restart (`negotiationneeded` once connected).
    func restartRequested() {
        loop.execute { [self] in feed { $0.restartRequested(now: loop.now) } }
    }

    /// The app closes the session: nothing more is tried.
    func close() {
        loop.execute { [self] in
            machine?.close()
            settle(nil)
            for id in [deadlineTimer, watchTimer].compactMap({ $0 }) { loop.cancelTimer(id) }
            deadlineTimer = nil
            watchTimer = nil
        }
    }

    // MARK: loop work

    private func watch() {
        watchTimer = nil
        guard let machine, !machine.isStopped else { return }
        if let pc = session?.watchedConnection {
            let state = pc.connectionState
            feed { $0.connection(state, now: loop.now) }
        }
        watchTimer = loop.schedule(at: loop.now.advanced(by: Self.watchInterval)) { [weak self] in self?.watch() }
    }

    private func feed(_ input: (inout ReconnectMachine) -> [ReconnectMachine.Action]) {
        guard var m = machine else { return }
        let actions = input(&m)
        machine = m
        for action in actions { perform(action) }
        if case .connecting = m.phase {} else { settle(nil) }
        rearm()
    }

    private func perform(_ action: ReconnectMachine.Action) {
        guard let session else { return }
        switch action {
        case .report(let event):
            if case .failed = event { settle(event) }
            session.report(event)
        case .restartIce(let force):
            exchange { await session.restartIce(force: force) }
        case .retireConnection:
            session.retireConnection()
        case .reconnect(let attempt):
            session.retireConnection()
            exchange { await session.reconnect(attempt: attempt) }
        }
    }

    /// Runs one signaling exchange in a task, counted from now until its outcome is fed back.
    private func exchange(_ body: @escaping @Sendable () async -> ExchangeOutcome) {
        activity.begin()
        Task { [self] in
            let outcome = await body()
            loop.execute { [self] in feed { $0.exchangeFinished(outcome, now: loop.now) } }
            activity.end()
        }
    }

    private func rearm() {
        if let id = deadlineTimer { loop.cancelTimer(id) }
        deadlineTimer = nil
        guard let deadline = machine?.deadline else { return }
        deadlineTimer = loop.schedule(at: deadline) { [weak self] in
            guard let self else { return }
            deadlineTimer = nil
            feed { $0.timeout(now: self.loop.now) }
        }
    }

    /// The first connection's outcome, to whoever waits for it.
    private func settle(_ event: ReconnectEvent?) {
        let waiting = onSettled
        onSettled = []
        for resume in waiting { resume(event) }
    }
}
