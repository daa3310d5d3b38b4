// Test helper: a handler that holds requests to /hold (suspended, not blocking a thread) until
// the test opens the gate, so a connection is "busy on the server's side" for as long as needed.
@testable import HTTP

actor Gate {
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var isOpen = false
    private var arrived = 0

    nonisolated var handler: HTTPServer.Handler {
        { request in
            if request.path == "/hold" { await self.pass() }
            return await echoHandler(request)
        }
    }

    private func pass() async {
        arrived += 1
        watchers.removeAll { watcher in
            guard arrived >= watcher.count else { return false }
            watcher.continuation.resume()
            return true
        }
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Returns once `count` requests have reached the handler.
    func arrivals(_ count: Int) async {
        if arrived >= count { return }
        await withCheckedContinuation { watchers.append((count, $0)) }
    }

    func close() { isOpen = false }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
