import Glibc

/// A threaded loop's descriptors: the wake-up pipe and the registered fds with their handlers.
final class PollSet: @unchecked Sendable {
    // @unchecked: `handlers` and `changed` are touched only on the loop thread (register and
    // unregister check it); the pipe's fds never change.
    let wakeFD: Int32      // read end of the wake-up pipe (polled)
    let wakeWriteFD: Int32 // write end
    var handlers: [Int32: () -> Void] = [:] { didSet { changed = true } }
    var changed = true

    init() throws(TransportError) {
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { throw TransportError("pipe failed: \(errnoString())") }
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = pipeFDs[0]
        wakeWriteFD = pipeFDs[1]
    }

    func wake() {
        var one: UInt8 = 1
        _ = write(wakeWriteFD, &one, 1)   // a full pipe already means "wake up"
    }

    func drainWakeUps() {
        var sink = [UInt8](repeating: 0, count: 256)
        while read(wakeFD, &sink, sink.count) > 0 {}
    }

    deinit {
        close(wakeFD)
        close(wakeWriteFD)
    }
}

extension EventLoop {
    /// Starts the loop's thread; it holds the loop until `shutdown()` has run.
    func startThread(_ pollSet: PollSet) throws(TransportError) {
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            guard let arg else { return nil }
            let loop = Unmanaged<EventLoop>.fromOpaque(arg).takeRetainedValue()
            loop.runThread()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            throw TransportError("pthread_create failed: \(rc)")
        }
        pthread_detach(tid)   // nobody joins: the thread ends after shutdown() and frees itself
    }

    private func runThread() {
        guard case .thread(let pollSet) = driver else { return }
        runner.withLock { $0 = pthread_self() }
        var fds: [pollfd] = []
        while !stopped.load(ordering: .relaxed) {
            // The poll set is rebuilt only when a handler was added or removed: with hundreds of
            // connections on one loop, rebuilding it on every wake-up dominated.
            if pollSet.changed {
                fds.removeAll(keepingCapacity: true)
                fds.append(pollfd(fd: pollSet.wakeFD, events: Int16(POLLIN), revents: 0))
                for fd in pollSet.handlers.keys { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
                pollSet.changed = false
            }
            for i in fds.indices { fds[i].revents = 0 }
            let n = poll(&fds, nfds_t(fds.count), pollTimeoutMillis())
            if n < 0 && errno != EINTR { break }
            if n > 0 {
                for entry in fds where entry.revents != 0 {
                    if entry.fd == pollSet.wakeFD {
                        pollSet.drainWakeUps()
                    } else if let handler = pollSet.handlers[entry.fd] {
                        handler()
                    }
                }
            }
            runPending()
            fireDueTimers()
        }
        runPending()
    }

    private func pollTimeoutMillis() -> Int32 {
        guard let earliest = timers.earliest() else { return -1 }
        let remaining = now.duration(to: earliest)
        if remaining <= .zero { return 0 }
        let (s, atto) = remaining.components
        let ms = s * 1000 + atto / 1_000_000_000_000_000 + 1
        return Int32(clamping: ms)
    }

    /// Fires what was due when this round began, earliest first; timers those schedule for
    /// now already wait for the next round (no starvation of the poll).
    private func fireDueTimers() {
        let now = self.now
        var due: [() -> Void] = []
        while let fire = timers.popDue(now) { due.append(fire) }
        for fire in due { fire() }
    }
}
