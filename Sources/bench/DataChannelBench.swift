// Data channel throughput on loopback: two SwiftRTC PeerConnections in this process, each on
// its own event loop, a data-only connection, one reliable ordered channel, 64 KiB messages.
import Foundation
import PeerConnection
import Synchronization
import Transport

/// Bytes received so far, counted on the receiver's loop thread: the delegate of the
/// receiving connection and of the channel the peer opens.
final class ByteCounter: PeerConnectionDelegate, DataChannelDelegate {
    private let bytes = Atomic<Int>(0)
    var value: Int { bytes.load(ordering: .relaxed) }

    func peerConnection(_ peerConnection: PeerConnection, didOpen dataChannel: DataChannel) { dataChannel.delegate = self }
    func dataChannel(_ channel: DataChannel, didReceiveMessage message: DataChannelMessage) {
        bytes.add(message.data.count, ordering: .relaxed)
    }
    func dataChannelDidChangeState(_ channel: DataChannel) {}
}

/// Sends `totalBytes` in `messageSize` messages and returns MB/s (10^6 bytes) from the first
/// send to the last byte received. The sender keeps at most 4 MiB queued (bufferedAmount),
/// as an app following the W3C flow-control pattern does.
func swiftDataChannelThroughput(totalBytes: Int, messageSize: Int, timeout: Duration = .seconds(120)) async throws -> Double {
    let loops = (try EventLoop(name: "bench-dc-offerer"), try EventLoop(name: "bench-dc-answerer"))
    defer {
        loops.0.shutdown()
        loops.1.shutdown()
    }
    let offerer = try PeerConnection(configuration: loopbackConfiguration(answerer: false), loop: loops.0)
    let answerer = try PeerConnection(configuration: loopbackConfiguration(answerer: true), loop: loops.1)
    defer { Task { await offerer.close(); await answerer.close() } }
    let received = ByteCounter()
    answerer.delegate = received
    let channel = try await offerer.createDataChannel("bench")
    try await offerer.setLocalDescription(try await offerer.createOffer())
    await offerer.waitForGatheringComplete()
    guard let offer = offerer.localDescription else { throw BenchError("no offer") }
    try await answerer.setRemoteDescription(offer)
    try await answerer.setLocalDescription(try await answerer.createAnswer())
    await answerer.waitForGatheringComplete()
    guard let answer = answerer.localDescription else { throw BenchError("no answer") }
    try await offerer.setRemoteDescription(answer)
    var events = channel.events.makeAsyncIterator()
    while channel.readyState != .open {
        guard let e = await events.next() else { throw BenchError("the data channel closed before it opened") }
        if case .error(let error) = e { throw BenchError(error.description) }
    }
    channel.bufferedAmountLowThreshold = 1 << 20
    let message = Data(repeating: 0xab, count: messageSize)
    let count = totalBytes / messageSize
    let started = ContinuousClock.now
    for _ in 0..<count {
        while channel.bufferedAmount > 4 << 20 {
            guard let e = await events.next() else { throw BenchError("the data channel closed while sending") }
            if case .error(let error) = e { throw BenchError(error.description) }
        }
        try channel.send(message)
    }
    let deadline = started.advanced(by: timeout)
    while received.value < count * messageSize {
        guard ContinuousClock.now < deadline else {
            throw BenchError("only \(received.value) of \(count * messageSize) bytes arrived within \(timeout)")
        }
        try await Task.sleep(for: .milliseconds(2))
    }
    return Double(count * messageSize) / 1e6 / (millisecondsSince(started) / 1000)
}
