/// Window size for replay protection, in packets (RFC 3711 §3.3.2 asks for at least 64).
let replayWindowSize = 128

/// 128 bits as two words; bit k stands for "index (newest - k) was seen" (or window_start + k).
struct Bits128: Equatable {
    var low: UInt64 = 0   // bits 0...63
    var high: UInt64 = 0  // bits 64...127

    @inline(__always) func get(_ k: Int) -> Bool {
        k < 64 ? (low >> UInt64(k)) & 1 == 1 : (high >> UInt64(k - 64)) & 1 == 1
    }

    @inline(__always) mutating func set(_ k: Int) {
        if k < 64 { low |= 1 << UInt64(k) } else { high |= 1 << UInt64(k - 64) }
    }

    /// Moves every bit k to k + n; bits pushed past 127 are dropped.
    @inline(__always) mutating func shiftUp(_ n: Int) {
        if n >= 128 { low = 0; high = 0 }
        else if n >= 64 { high = low << UInt64(n - 64); low = 0 }
        else if n > 0 { high = (high << UInt64(n)) | (low >> UInt64(64 - n)); low <<= UInt64(n) }
    }

    /// Moves every bit k to k - n; bits pushed below 0 are dropped.
    @inline(__always) mutating func shiftDown(_ n: Int) {
        if n >= 128 { low = 0; high = 0 }
        else if n >= 64 { low = high >> UInt64(n - 64); high = 0 }
        else if n > 0 { low = (low >> UInt64(n)) | (high << UInt64(64 - n)); high >>= UInt64(n) }
    }
}

/// Rollover counter tracking, packet index estimation (RFC 3711 §3.3.1, Appendix A) and the
/// replay list of one SRTP stream. The estimation follows libsrtp's rule exactly so both
/// backends accept and number the same packets: while the highest index is at most 2^15 the
/// rollover counter is taken as 0, so an early reordered packet cannot guess ROC = -1.
struct RTPIndexTracker {
    /// Highest accepted index: ROC << 16 | SEQ (48 bits).
    private(set) var index: UInt64 = 0
    private var seen = Bits128()

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

    @inline(__always)
    func check(_ delta: Int) -> Check {
        if delta > 0 { return .fresh }
        if -delta >= replayWindowSize { return .tooOld }
        return seen.get(-delta) ? .repeated : .fresh
    }

    /// Records an accepted packet.
    @inline(__always)
    mutating func add(index newIndex: UInt64, delta: Int) {
        if delta > 0 {
            seen.shiftUp(delta)
            seen.set(0)
            index = newIndex
        } else {
            seen.set(-delta)
        }
    }
}

/// SRTCP replay list (RFC 3711 §3.4): a window of 128 indices starting at `windowStart`,
/// moved forward when a newer index arrives. Same acceptance rule as libsrtp's.
struct RTCPReplayWindow {
    private var windowStart: UInt32 = 0
    private var seen = Bits128()

    @inline(__always)
    func check(_ index: UInt32) -> RTPIndexTracker.Check {
        if UInt64(index) >= UInt64(windowStart) + UInt64(replayWindowSize) { return .fresh }
        if index < windowStart { return .tooOld }
        return seen.get(Int(index - windowStart)) ? .repeated : .fresh
    }

    @inline(__always)
    mutating func add(_ index: UInt32) {
        guard index >= windowStart else { return }
        let delta = Int(index - windowStart)
        if delta < replayWindowSize {
            seen.set(delta)
        } else {
            let shift = delta - (replayWindowSize - 1)
            seen.shiftDown(shift)
            seen.set(replayWindowSize - 1)
            windowStart &+= UInt32(shift)
        }
    }
}
