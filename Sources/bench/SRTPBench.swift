// SRTP throughput: Debian's libsrtp2 (srtp_protect called directly) against our OpenSSL backend,
// alone and followed by sendmmsg on a connected loopback UDP socket — the relay's hot path.
import CSRTP
import Foundation
import Glibc
import SRTP

private let benchPacketSize = 1200
private let benchBatch = 32

/// Measures, on the calling thread, 1200-byte RTP packets for AES-CM-HMAC-SHA1-80 and
/// AEAD-AES-128-GCM: libsrtp2's own `srtp_protect` rate, our OpenSSL backend's protect rate, our
/// protect + `sendmmsg` (batches of 32) to a loopback socket nobody reads (the kernel drops what
/// overflows its buffer, after the sender has paid for delivery), the send alone, and the ratio
/// protect+send / libsrtp2 protect per profile. Also the same with UDP GSO (one sendmsg carrying
/// 32 equal-sized datagrams, UDP_SEGMENT) where the kernel supports it. `seconds` is the CPU-time budget of each of the
/// timed loops. Rates are per CPU-second of the measuring thread (see `rate`).
public func srtpBenchmark(seconds: Double) -> [(name: String, value: Double, unit: String)] {
    var rows: [(name: String, value: Double, unit: String)] = []
    let duration = max(seconds, 0.05)
    let link = LoopbackLink()
    for profile in [SRTPProfile.aes128CmHmacSha1_80, .aeadAes128Gcm] {
        let tag = profile == .aes128CmHmacSha1_80 ? "aes128_cm_sha1_80" : "aead_aes128_gcm"
        guard let libsrtpRate = libsrtpProtectRate(profile: profile, seconds: duration),
              let session = benchSession(profile) else { continue }
        let ourRate = protectRate(session: session, seconds: duration)
        rows.append((name: "srtp.libsrtp2.protect.\(tag)", value: libsrtpRate, unit: "packets/s"))
        rows.append((name: "srtp.openssl.protect.\(tag)", value: ourRate, unit: "packets/s"))
        rows.append((name: "srtp.openssl_vs_libsrtp2.protect.\(tag)", value: ourRate / libsrtpRate, unit: "ratio"))
        if let link, sendmmsgFunction != nil, MemoryLayout<MMsgHdr>.stride == 64, let sendSession = benchSession(profile) {
            let sendRate = protectAndSendRate(session: sendSession, link: link, seconds: duration)
            rows.append((name: "srtp.openssl.protect_sendmmsg.\(tag)", value: sendRate, unit: "packets/s"))
            rows.append((name: "srtp.protect_sendmmsg_vs_libsrtp2_protect.\(tag)", value: sendRate / libsrtpRate, unit: "ratio"))
        }
        if let gsoSession = benchSession(profile), let gsoRate = protectAndSendGSORate(session: gsoSession, seconds: duration) {
            rows.append((name: "srtp.openssl.protect_send_gso.\(tag)", value: gsoRate, unit: "packets/s"))
            rows.append((name: "srtp.protect_send_gso_vs_libsrtp2_protect.\(tag)", value: gsoRate / libsrtpRate, unit: "ratio"))
        }
    }
    if let link, sendmmsgFunction != nil, MemoryLayout<MMsgHdr>.stride == 64 {
        rows.append((name: "udp.loopback.sendmmsg32.1200B", value: sendOnlyRate(link: link, seconds: duration), unit: "packets/s"))
    }
    return rows
}

// MARK: Timing

private func clockSeconds(_ clock: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Runs `body` (which processes `perCall` packets) until the thread has used `seconds` of CPU;
/// returns packets per CPU-second of this thread (system time of the send calls included). On a
/// shared machine this is what one free core would do; wall-clock rates would measure the
/// neighbours. Gives up after 5× `seconds` of wall time.
private func rate(seconds: Double, perCall: Int, _ body: () -> Bool) -> Double {
    for _ in 0..<64 where !body() { return 0 }  // warm up
    let cpuStart = clockSeconds(CLOCK_THREAD_CPUTIME_ID)
    let wallStart = clockSeconds(CLOCK_MONOTONIC)
    var packets = 0
    var cpu = cpuStart
    repeat {
        for _ in 0..<64 {
            guard body() else { return 0 }
            packets += perCall
        }
        cpu = clockSeconds(CLOCK_THREAD_CPUTIME_ID)
    } while cpu - cpuStart < seconds && clockSeconds(CLOCK_MONOTONIC) - wallStart < 5 * seconds
    return cpu > cpuStart ? Double(packets) / (cpu - cpuStart) : 0
}

// MARK: Packets and sessions

private func benchKey(_ n: Int, _ seed: UInt8) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

private func benchSession(_ profile: SRTPProfile) -> SRTPSession? {
    try? SRTPSession(profile: profile,
                     localKey: benchKey(profile.keyLength, 1), localSalt: benchKey(profile.saltLength, 2),
                     remoteKey: benchKey(profile.keyLength, 3), remoteSalt: benchKey(profile.saltLength, 4))
}

/// Writes a 1200-byte RTP packet (12-byte header, SSRC 0x11223344) with sequence number `seq`.
private func writeRTP(_ p: UnsafeMutableRawPointer, seq: UInt16) {
    p.storeBytes(of: 0x80, toByteOffset: 0, as: UInt8.self)
    p.storeBytes(of: 96, toByteOffset: 1, as: UInt8.self)
    p.storeBytes(of: seq.bigEndian, toByteOffset: 2, as: UInt16.self)
    p.storeBytes(of: UInt32(90_000).bigEndian, toByteOffset: 4, as: UInt32.self)
    p.storeBytes(of: UInt32(0x1122_3344).bigEndian, toByteOffset: 8, as: UInt32.self)
}

// MARK: (1) libsrtp2 directly

private func libsrtpProtectRate(profile: SRTPProfile, seconds: Double) -> Double? {
    // Creating a libsrtp-backed session runs the SRTP module's one-time srtp_init.
    guard (try? SRTPSession(profile: profile, localKey: benchKey(16, 1), localSalt: benchKey(profile.saltLength, 2),
                            remoteKey: benchKey(16, 3), remoteSalt: benchKey(profile.saltLength, 4),
                            backend: .libsrtp)) != nil else { return nil }
    var policy = srtp_policy_t()
    switch profile {
    case .aes128CmHmacSha1_80:
        srtp_crypto_policy_set_rtp_default(&policy.rtp)
        srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
    case .aeadAes128Gcm:
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
    }
    policy.ssrc.type = ssrc_any_outbound
    policy.window_size = 128
    policy.allow_repeat_tx = 1
    var key = benchKey(16, 1) + benchKey(profile.saltLength, 2)
    var session: srtp_t?
    let created = key.withUnsafeMutableBufferPointer { k in
        policy.key = k.baseAddress
        return srtp_create(&session, &policy)
    }
    guard created == srtp_err_status_ok, let session else { return nil }
    defer { srtp_dealloc(session) }
    let buffer = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 16)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0x5A, count: 2048)
    var seq: UInt16 = 0
    return rate(seconds: seconds, perCall: 1) {
        writeRTP(buffer, seq: seq)
        seq &+= 1
        var length = Int32(benchPacketSize)
        return srtp_protect(session, buffer, &length) == srtp_err_status_ok
    }
}

// MARK: (2) our backend

private func protectRate(session: SRTPSession, seconds: Double) -> Double {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    defer { buffer.deallocate() }
    buffer.initializeMemory(as: UInt8.self, repeating: 0x5A)
    var seq: UInt16 = 0
    return rate(seconds: seconds, perCall: 1) {
        guard let base = buffer.baseAddress else { return false }
        writeRTP(base, seq: seq)
        seq &+= 1
        return (try? session.protectRTP(in: buffer, length: benchPacketSize)) != nil
    }
}

// MARK: (3) protect + sendmmsg

/// A UDP socket connected to a second one on 127.0.0.1 that is never read.
private final class LoopbackLink {
    let sender: Int32
    let receiver: Int32

    init?() {
        receiver = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        sender = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard receiver >= 0, sender >= 0 else { return nil }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { a in
            a.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(receiver, sa, len) == 0 && getsockname(receiver, sa, &len) == 0 && connect(sender, sa, len) == 0
            }
        }
        guard ok else { return nil }
    }

    deinit {
        close(sender)
        close(receiver)
    }
}

/// `struct mmsghdr` (Glibc's Swift module leaves out the _GNU_SOURCE socket calls): a msghdr and
/// the kernel's byte count; same field order, size (64) and alignment as the C struct on LP64.
struct MMsgHdr {
    var msg_hdr = msghdr()
    var msg_len: UInt32 = 0
}

typealias SendMMsg = @convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32) -> Int32

/// sendmmsg(2), looked up in the already-loaded libc.
let sendmmsgFunction: SendMMsg? = {
    guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "sendmmsg") else { return nil }
    return unsafeBitCast(symbol, to: SendMMsg.self)
}()

/// 32 packet buffers with their iovecs and mmsghdrs, built once.
private final class SendBatch {
    let stride = 2048
    let storage: UnsafeMutableRawPointer
    let iovecs: UnsafeMutablePointer<iovec>
    let messages: UnsafeMutablePointer<MMsgHdr>

    init() {
        storage = .allocate(byteCount: stride * benchBatch, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0x5A, count: stride * benchBatch)
        iovecs = .allocate(capacity: benchBatch)
        messages = .allocate(capacity: benchBatch)
        for i in 0..<benchBatch {
            iovecs[i] = iovec(iov_base: storage + i * stride, iov_len: benchPacketSize)
            var m = MMsgHdr()
            m.msg_hdr.msg_iov = iovecs + i
            m.msg_hdr.msg_iovlen = 1
            messages[i] = m
        }
    }

    deinit {
        storage.deallocate()
        iovecs.deallocate()
        messages.deallocate()
    }

    func packet(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage + i * stride, count: stride)
    }

    /// Sends all 32; false on a hard error.
    func send(_ fd: Int32) -> Bool {
        guard let sendmmsg = sendmmsgFunction else { return false }
        var sent = 0
        while sent < benchBatch {
            let n = sendmmsg(fd, UnsafeMutableRawPointer(messages + sent), UInt32(benchBatch - sent), 0)
            if n < 0 {
                if errno == EINTR || errno == EAGAIN || errno == ENOBUFS || errno == ECONNREFUSED { continue }
                return false
            }
            sent += Int(n)
        }
        return true
    }
}

private func protectAndSendRate(session: SRTPSession, link: LoopbackLink, seconds: Double) -> Double {
    let batch = SendBatch()
    var seq: UInt16 = 0
    return rate(seconds: seconds, perCall: benchBatch) {
        for i in 0..<benchBatch {
            let buffer = batch.packet(i)
            guard let base = buffer.baseAddress else { return false }
            writeRTP(base, seq: seq)
            seq &+= 1
            guard let n = try? session.protectRTP(in: buffer, length: benchPacketSize) else { return false }
            batch.iovecs[i].iov_len = n
        }
        return batch.send(link.sender)
    }
}

private func sendOnlyRate(link: LoopbackLink, seconds: Double) -> Double {
    let batch = SendBatch()
    return rate(seconds: seconds, perCall: benchBatch) { batch.send(link.sender) }
}

// MARK: (3b) protect + one GSO sendmsg per batch

/// Protects 32 packets into one contiguous buffer and sends them with a single sendmsg that the
/// kernel segments into 32 datagrams (UDP_SEGMENT, Linux 4.18+): one trip down the stack per
/// batch instead of one per packet. nil where the option is refused.
private func protectAndSendGSORate(session: SRTPSession, seconds: Double) -> Double? {
    guard let link = LoopbackLink() else { return nil }
    let wire = benchPacketSize + session.profile.rtpOverhead
    var segment = Int32(wire)
    let udpSegment: Int32 = 103  // UDP_SEGMENT from <linux/udp.h>
    guard setsockopt(link.sender, Int32(IPPROTO_UDP), udpSegment, &segment, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
        return nil
    }
    let storage = UnsafeMutableRawPointer.allocate(byteCount: wire * benchBatch + 64, alignment: 16)
    defer { storage.deallocate() }
    storage.initializeMemory(as: UInt8.self, repeating: 0x5A, count: wire * benchBatch + 64)
    var vector = iovec(iov_base: storage, iov_len: wire * benchBatch)
    var seq: UInt16 = 0
    let result = withUnsafeMutablePointer(to: &vector) { iov -> Double in
        var message = msghdr()
        message.msg_iov = iov
        message.msg_iovlen = 1
        return rate(seconds: seconds, perCall: benchBatch) {
            for i in 0..<benchBatch {
                // Room for the trailer: the next packet's slot is rewritten after this one is protected.
                let packet = UnsafeMutableRawBufferPointer(start: storage + i * wire, count: wire)
                guard let base = packet.baseAddress else { return false }
                writeRTP(base, seq: seq)
                seq &+= 1
                guard (try? session.protectRTP(in: packet, length: benchPacketSize)) == wire else { return false }
            }
            while true {
                if sendmsg(link.sender, &message, 0) >= 0 { return true }
                if errno != EINTR && errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED { return false }
            }
        }
    }
    return result > 0 ? result : nil
}
