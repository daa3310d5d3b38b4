import Transport

/// Continual gathering and automatic ICE restarts (issue 21): the connection follows the host's
/// addresses, and asks for a restart (`restartIce()`: `negotiationNeeded` follows, the app's
/// signaling carries it) when its path's address went away or ICE stayed `disconnected`.
extension PeerConnection {
    /// Whether this connection watches the host's interfaces (see `continualGatheringPolicy`).
    var gathersContinually: Bool {
        configuration.continualGatheringPolicy == .gatherContinually && !configuration.iceLite
            && configuration.interfaceAddresses == nil
    }

    /// The monitor, started before the datagram path lists the addresses (loop thread), so an
    /// address that appears in between is seen by one or the other. Its events go to the
    /// transport made next. A monitor that cannot start is reported; the connection goes on.
    func startInterfaceMonitor() -> InterfaceMonitor? {
        guard gathersContinually else { return nil }
        do {
            guard let monitor = try interfaceMonitorFactory(loop) else { return nil }
            try monitor.start { [weak self] event in self?.transport?.interfaceChanged(event) }
            return monitor
        } catch {
            emit(.error(PeerConnectionError(.transport, "continual gathering is off: \(error)")))
            return nil
        }
    }

    /// The selected pair's local address went away: only a restart finds a new path for sure
    /// (the peer drops what it paired with the old address; we are not always the one to nominate).
    func selectedPathLost() {
        guard !closed, !configuration.iceLite else { return }
        restartIce()
    }

    /// After each ICE state change: a restart `iceRestartAfter` into a disconnection, once.
    func armDisconnectedRestart() {
        let disconnected = iceState == .disconnected
        if !disconnected, let timer = disconnectedRestartTimer {
            loop.cancelTimer(timer)
            disconnectedRestartTimer = nil
        }
        guard disconnected, disconnectedRestartTimer == nil, !configuration.iceLite,
              let after = configuration.iceRestartAfter else { return }
        disconnectedRestartTimer = loop.schedule(at: loop.now + after) { [weak self] in
            // Stays set while this disconnection lasts: one restart each.
            guard let self, !closed, iceState == .disconnected else { return }
            restartIce()
        }
    }
}
