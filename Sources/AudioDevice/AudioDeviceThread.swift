import Foundation
import Locks

/// The audio thread of one device stream: runs `frame` back to back (each call blocks on the
/// device for ~10 ms, which paces it). When the device fails it reports `.lost`, closes it,
/// retries `open` every `retryMs`, and reports `.recovered` once it runs again — as the camera
/// does after a disconnect.
final class AudioDeviceThread<Stream: AnyObject & Sendable>: Sendable {
    typealias Open = @Sendable () throws(AudioDeviceError) -> Stream
    typealias Frame = @Sendable (Stream) throws(AudioDeviceError) -> Void

    private let stopping = Locked(false)
    /// Signalled by `stop()`: ends a wait between reopen attempts at once.
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts with `first`, already open (so opening errors reach the caller of `start`).
    init(name: String, device: String, first: Stream, retryMs: Int = 500, open: @escaping Open,
         frame: @escaping Frame, close: @escaping @Sendable (Stream) -> Void,
         onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void) {
        let thread = Thread { [stopping, wake, finished] in
            var stream: Stream? = first
            var lost = false
            while !stopping.value {
                guard let current = stream else {
                    do {
                        stream = try open()
                        lost = false
                        onEvent(.recovered(device: device))
                    } catch {
                        _ = wake.wait(timeout: .now() + .milliseconds(retryMs))
                    }
                    continue
                }
                do {
                    try frame(current)
                } catch {
                    close(current)
                    stream = nil
                    if !lost {
                        lost = true
                        onEvent(.lost(device: device, reason: "\(error)"))
                    }
                }
            }
            if let stream { close(stream) }
            finished.signal()
        }
        thread.name = name
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    /// Stops and waits for the thread (at most one device call, ~10 ms). Idempotent.
    func stop() {
        let wasStopping = stopping.withLock { s -> Bool in
            defer { s = true }
            return s
        }
        guard !wasStopping else { return }
        wake.signal()
        finished.wait()
    }
}

/// The running audio thread of a capturer or playout, if any; replacing or stopping it joins
/// the old one first.
final class AudioDeviceThreadSlot<Stream: AnyObject & Sendable>: Sendable {
    private let current = Locked<AudioDeviceThread<Stream>?>(nil)

    func set(_ thread: AudioDeviceThread<Stream>) {
        stop()
        current.withLock { $0 = thread }
    }

    func stop() {
        let old = current.withLock { t -> AudioDeviceThread<Stream>? in
            defer { t = nil }
            return t
        }
        old?.stop()
    }
}
