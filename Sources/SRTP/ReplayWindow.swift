/// SRTP replay window, in packets (RFC 3711 §3.3.2 asks for at least 64). 1024 rather than
/// libsrtp's default 128 so a NACKed packet re-sent with its original sequence number, arriving
/// a few hundred packets late on a high-rate video stream, is still accepted. libsrtp gets the
/// same value through its policy's `window_size`.
let replayWindowSize = 1024

/// SRTCP replay window: libsrtp's is a fixed 128 (`window_size` applies to SRTP only), so ours
/// stays 128 too and both backends accept the same SRTCP packets.
let rtcpReplayWindowSize = 128

/// A fixed-size bit set for replay lists; bit k stands for "index (newest - k) was seen" (or
/// window_start + k). Its words are allocated once, with the stream; per packet it only
/// shifts and sets bits in place.
struct ReplayBitmap: Equatable {
    private var words: [UInt64]

    init(bits: Int) {
        words = [UInt64](repeating: 0, count: max(1, (bits + 63) / 64))
    }

    @inline(__always) func get(_ k: Int) -> Bool {
        guard k >= 0, k >> 6 < words.count else { return false }
        return (words[k >> 6] >> UInt64(k & 63)) & 1 == 1
    }

    @inline(__always) mutating func set(_ k: Int) {
        guard k >= 0, k >> 6 < words.count else { return }
        words[k >> 6] |= 1 << UInt64(k & 63)
    }

    /// Moves every bit k to k + n; bits pushed past the end are dropped.
    mutating func shiftUp(_ n: Int) {
        guard n > 0 else { return }
        let wordShift = n >> 6
        let bitShift = UInt64(n & 63)
        words.withUnsafeMutableBufferPointer { w in
            for i in stride(from: w.count - 1, through: 0, by: -1) {
                let src = i - wordShift
                var v: UInt64 = 0
                if src >= 0 {
                    v = w[src] << bitShift
                    if bitShift > 0 && src > 0 { v |= w[src - 1] >> (64 - bitShift) }
                }
                w[i] = v
            }
        }
    }

    /// Moves every bit k to k - n; bits pushed below 0 are dropped.
    mutating func shiftDown(_ n: Int) {
        guard n > 0 else { return }
        let wordShift = n >> 6
        let bitShift = UInt64(n & 63)
        words.withUnsafeMutableBufferPointer { w in
            for i in 0..<w.count {
                let src = i + wordShift
                var v: UInt64 = 0
                if src < w.count {
                    v = w[src] >> bitShift
                    if bitShift > 0 && src + 1 < w.count { v |= w[src + 1] << (64 - bitShift) }
                }
                w[i] = v
            }
        }
    }
}

/// Rollover counter tracking and packet index estimation (RFC 3711 §3.3.1, Appendix A) of one
/// SRTP stream. The estimation follows libsrtp's rule exactly so both backends accept and
/// number the same packets: while the highest index is at most 2^15 the rollover counter is
/// taken as 0, so an early reordered packet cannot guess ROC = -1.
///
/// Alone it is the sending side's state: a sender only refuses packets older than the window
/// (a repeat is a NACK re-send, libsrtp's allow_repeat_tx), so it keeps no replay list — the
/// relay protects every packet for hundreds of players, and each list would be two more cache
/// lines per player per packet. Receivers use `RTPReplayList`.
struct RTPIndexTracker {
    /// Highest index: ROC << 16 | SEQ (48 bits).
    private(set) var index: UInt64 = 0

    enum Check { case fresh, repeated, tooOld }

    /// Estimates the 48-bit index of a packet with sequence number `seq`, and its distance from
    /// the highest index so far.
    @inline(__always)
    func estimate(_ seq: UInt16) -> (index: UInt64, delta: Int) {
        let s = Int(seq)
        if index <= 0x8000 {
            return (UInt64(seq), s - Int(index))
        }
        let localROC = UInt32(truncatingIfNeeded: index >> 16)
        let localSeq = Int(index & 0xFFFF)
        let roc: UInt32
        let delta: Int
        if localSeq < 0x8000 {
            if s - localSeq > 0x8000 { roc = localROC &- 1; delta = s - localSeq - 0x10000 }
            else { roc = localROC; delta = s - localSeq }
        } else {
            if localSeq - 0x8000 > s { roc = localROC &+ 1; delta = s - localSeq + 0x10000 }
            else { roc = localROC; delta = s - localSeq }
        }
        return (UInt64(roc) << 16 | UInt64(seq), delta)
    }

    /// Outside the replay window behind the highest index.
    @inline(__always)
    static func isTooOld(_ delta: Int) -> Bool { -delta >= replayWindowSize }

    /// Records a packet: a newer index becomes the highest.
    @inline(__always)
    mutating func advance(index newIndex: UInt64, delta: Int) {
        if delta > 0 { index = newIndex }
    }
}

/// The receiving side of one SRTP stream: its index tracker and replay list.
struct RTPReplayList {
    private(set) var tracker = RTPIndexTracker()
    private var seen = ReplayBitmap(bits: replayWindowSize)

    @inline(__always)
    func estimate(_ seq: UInt16) -> (index: UInt64, delta: Int) { tracker.estimate(seq) }

    @inline(__always)
    func check(_ delta: Int) -> RTPIndexTracker.Check {
        if delta > 0 { return .fresh }
        if RTPIndexTracker.isTooOld(delta) { return .tooOld }
        return seen.get(-delta) ? .repeated : .fresh
    }

    /// Records an accepted packet.
    @inline(__always)
    mutating func add(index newIndex: UInt64, delta: Int) {
        if delta > 0 {
            seen.shiftUp(delta)
            seen.set(0)
        } else {
            seen.set(-delta)
        }
        tracker.advance(index: newIndex, delta: delta)
    }
}

/// SRTCP replay list (RFC 3711 §3.4): a window of 128 indices starting at `windowStart`,
/// moved forward when a newer index arrives. Same acceptance rule as libsrtp's.
struct RTCPReplayWindow {
    private var windowStart: UInt32 = 0
    private var seen = ReplayBitmap(bits: rtcpReplayWindowSize)

    @inline(__always)
    func check(_ index: UInt32) -> RTPIndexTracker.Check {
        if UInt64(index) >= UInt64(windowStart) + UInt64(rtcpReplayWindowSize) { return .fresh }
        if index < windowStart { return .tooOld }
        return seen.get(Int(index - windowStart)) ? .repeated : .fresh
    }

    @inline(__always)
    mutating func add(_ index: UInt32) {
        guard index >= windowStart else { return }
        let delta = Int(index - windowStart)
        if delta < rtcpReplayWindowSize {
            seen.set(delta)
        } else {
            let shift = delta - (rtcpReplayWindowSize - 1)
            seen.shiftDown(shift)
            seen.set(rtcpReplayWindowSize - 1)
            windowStart &+= UInt32(shift)
        }
    }
}
