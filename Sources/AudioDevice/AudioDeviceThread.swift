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
            AudioDeviceThreadPriority.raise()
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

/// Audio threads run ahead of everything else when the system lets them, as libwebrtc's and
/// PulseAudio's own do: a device thread waiting behind busy threads for longer than the device's
/// queue (60 ms of playout) is a gap the listener hears that no buffer of ours counts.
enum AudioDeviceThreadPriority {
    /// SCHED_FIFO at real-time priority 4: above every normal thread, just below PulseAudio's
    /// own (its default realtime-priority is 5; its sink threads run at RR 5 here). Without the
    /// privilege (no CAP_SYS_NICE, RLIMIT_RTPRIO 0) the thread keeps its normal priority. Each
    /// call blocks on the device every 10 ms, so it cannot starve the machine.
    static func raise() {
        var param = sched_param()
        param.sched_priority = min(4, sched_get_priority_max(SCHED_FIFO))
        _ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param)
    }
}
