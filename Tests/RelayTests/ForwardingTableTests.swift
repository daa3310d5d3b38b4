import Foundation
import HTTP
import PeerConnection
import RTP
import STUN
import Testing
import TestSupport
@testable import Relay
@testable import Transport

/// The stream's forwarding table (one flat record per connected player and kind): a record's
/// snapshot writes, protects and addresses a packet exactly as the slow path
/// (`RtpSender.forward(_:…into:)`) does, and the table follows players joining and leaving
/// and any change `ForwardingEpoch` announces.
///
/// Players offer abs-send-time as ours do (the relay answers it and stamps each packet's send
/// time on either path).
/// On real sockets: the fast path exists only on a shared socket with a kernel send batch (a
/// `UDPMux`'s `batchSocket`; a `VirtualMux` has none, so its records carry no snapshot). What
/// the test waits for are the relay's own events, from its log, never time.
@Suite(.serialized) struct ForwardingTableTests {
    struct Failure: Error { let reason: String; init(_ reason: String) { self.reason = reason } }
    let http = HTTPClient(timeout: .seconds(20))
    /// The relay's log lines as it writes them (on its loop thread, as things happen).
    let log = Monitor<[String]>([])

    func relay() async throws -> RelayServer {
        try await RelayServer(httpPort: 0, udpPort: 0, log: { [log] line in log.withLock { $0.append(line) } })
    }

    func connect(_ relay: RelayServer, _ endpoint: String, stream: String, direction: TransceiverDirection) async throws -> (PeerConnection, String) {
        var config = PeerConnection.Configuration()
        config.interfaceAddresses = [SocketAddress(host: "127.0.0.1", port: 0)].compactMap { $0 }
        let pc = try PeerConnection(configuration: config, loop: EventLoop(name: "test-\(endpoint)"))
        _ = try await pc.addTransceiver(.video, TransceiverInit(direction: direction), codecs: [.h264])
        try await pc.setLocalDescription(try await pc.createOffer())
        await pc.waitForGatheringComplete()
        let offer = try #require(pc.localDescription).sdp
        let created = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/\(endpoint)/?app=live&stream=\(stream)",
                                          headers: ["Content-Type": "application/sdp"], body: Array(offer.utf8))
        #expect(created.status == 201, "\(created.status) \(created.text)")
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: created.text))
        try await pc.waitConnected(timeout: .seconds(10))
        return (pc, try #require(created.headers["Location"]))
    }

    /// Waits until the relay has said that `count` players of `key` connected (its side of the
    /// session is up: keys and path in place, so a record gets its snapshot).
    func playersConnected(_ count: Int, _ key: String) async -> Bool {
        await log.wait(until: { lines in
            lines.filter { $0.hasPrefix("serve: player ") && $0.hasSuffix(" connected (\(key))") }.count >= count
        }, timeout: .seconds(10))
    }

    /// (records, with a snapshot, rebuilds) of the stream's video table as it is now.
    func table(_ relay: RelayServer, _ key: String) async throws -> (records: Int, fast: Int, rebuilds: Int) {
        try await relay.loop.submit { [state = relay.state] in
            guard let stream = state.value.streams[key] else { return (-1, -1, -1) }
            let table = stream.forwardingTable(.video)
            return (table.count, table.filter { $0.target != nil }.count, stream.tableRebuilds)
        }
    }

    @Test func snapshotSendsTheSlowPathsBytesAndFollowsPlayers() async throws {
        let relay = try await relay()
        var pcs: [PeerConnection] = []
        do {
            let (publisher, _) = try await connect(relay, "whip", stream: "ft", direction: .sendonly)
            pcs.append(publisher)
            let (first, _) = try await connect(relay, "whep", stream: "ft", direction: .recvonly)
            pcs.append(first)
            #expect(await playersConnected(1, "live/ft"), "\(log.value)")
            let one = try await table(relay, "live/ft")
            #expect(one.records == 1 && one.fast == 1)

            // The same packet through the record and through the sender at the same instant:
            // identical datagrams, abs-send-time stamped in both. With transport-wide sequence
            // numbers (a simulcast's players), identical but for the number, which each takes in
            // turn (and so the SRTP tag that covers it).
            let same = try await relay.loop.submit { [state = relay.state] () -> [String] in
                guard let stream = state.value.streams["live/ft"], let record = stream.forwardingTable(.video).first,
                      let plain = record.target else { return ["no record with a snapshot"] }
                let sender = record.sender.takeUnretainedValue()
                guard sender.absSendTimeExtensionID != nil, plain.absSendTimeID != 0 else { return ["abs-send-time not negotiated"] }
                let source = RTPPacket(marker: true, payloadType: 102, sequenceNumber: 1234, timestamp: 5678, ssrc: 42, csrcs: [7],
                                       extensions: [RTPHeaderExtension(id: 1, data: Array("0".utf8)), RTPHeaderExtension(id: 13, data: [0x02])],
                                       payload: Array(repeating: 0x5A, count: 1100), paddingLength: 2).serialize()
                /// Each datagram sent through `target` then through the sender, twice: without
                /// the transport-wide sequence number and the tag, and that number; or what went wrong.
                func sent(_ target: RtpForwardingTarget) -> Result<[(rest: [UInt8], sequence: UInt16?)], Failure> {
                    let fast = UDPSendBatch(flushThreshold: 100), slow = UDPSendBatch(flushThreshold: 100)
                    var outcome: RtpForwardingTarget.Outcome = .tooLarge, forwarded = false
                    source.withUnsafeBytes { raw in
                        guard let view = try? RTPHeaderView(raw) else { return }
                        for seq in [UInt16(300), 301] {
                            let now = ContinuousClock.now
                            outcome = target.send(view, sequenceNumber: seq, timestamp: 9000, payloadType: record.payloadType,
                                                  videoOrientationID: 13, into: fast, now: now)
                            forwarded = sender.forward(view, sequenceNumber: seq, timestamp: 9000, payloadType: record.payloadType,
                                                       videoOrientationID: 13, into: slow, now: now)
                        }
                    }
                    guard case .sent = outcome, forwarded, fast.count == 2, slow.count == 2 else {
                        return .failure(Failure("not sent: \(outcome) \(forwarded) \(fast.count) \(slow.count)"))
                    }
                    // Both carry the send time (the header is in the clear under SRTP).
                    // The header as RTP, with the padding bit cleared: SRTP encrypts the padding,
                    // so the byte that gives its length is ciphertext: when it reads 0 (1 in 256
                    // sessions' keys) the datagram is not valid RTP at all.
                    func range(of id: UInt8, in datagram: [UInt8]) -> Range<Int>? {
                        var header = datagram
                        header[0] &= ~0x20
                        return header.withUnsafeBytes { try? RTPHeaderView($0).extensionRange(id: id) }
                    }
                    let unstamped = (0..<2).flatMap { [fast.queued($0)!, slow.queued($0)!] }.enumerated().filter { _, datagram in
                        range(of: target.absSendTimeID, in: datagram.bytes)?.count != 3
                    }
                    if let (index, datagram) = unstamped.first {
                        return .failure(Failure("no abs-send-time element in datagram \(index): \(datagram.bytes.prefix(40).map { String($0, radix: 16) })"))
                    }
                    return .success((0..<2).flatMap { [fast.queued($0)!, slow.queued($0)!] }.map { datagram in
                        var bytes = datagram.bytes
                        let name = withUnsafeBytes(of: datagram.nameLength) { Array($0) }
                        guard let id = sender.transportCCExtensionID, let range = range(of: id, in: bytes), range.count == 2
                        else { return (bytes + name, nil) }
                        let sequence = UInt16(bytes[range.lowerBound]) << 8 | UInt16(bytes[range.lowerBound + 1])
                        bytes.replaceSubrange(range, with: [0, 0])
                        return (Array(bytes.dropLast(Int(target.overhead))) + name, sequence)
                    })
                }
                /// Empty when fast and slow sent the same bytes; else the first difference.
                func compare(_ result: Result<[(rest: [UInt8], sequence: UInt16?)], Failure>, numbered: Bool) -> String {
                    let datagrams: [(rest: [UInt8], sequence: UInt16?)]
                    switch result {
                    case .failure(let failure): return failure.reason
                    case .success(let sent): datagrams = sent
                    }
                    for pair in [0, 2] where datagrams[pair].rest != datagrams[pair + 1].rest {
                        let (a, b) = (datagrams[pair].rest, datagrams[pair + 1].rest)
                        let at = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
                        return "datagram \(pair / 2): \(a.count) vs \(b.count) bytes, first difference at \(at): "
                            + "\(a.prefix(at + 8).suffix(16)) vs \(b.prefix(at + 8).suffix(16))"
                    }
                    let sequences = datagrams.map(\.sequence)
                    if numbered {
                        guard let first = sequences[0], sequences == (0..<4).map({ first &+ UInt16($0) }) else {
                            return "transport-wide numbers \(sequences)"
                        }
                    } else if sequences.contains(where: { $0 != nil }) {
                        return "unexpected transport-wide numbers \(sequences)"
                    }
                    return ""
                }
                let without = compare(sent(plain), numbered: false)
                sender.transportCCExtensionID = 9
                defer { sender.transportCCExtensionID = nil }
                guard let stamping = sender.forwardingTarget()?.target else { return [without, "no snapshot with transport-cc"] }
                return [without, compare(sent(stamping), numbered: true)]
            }
            #expect(same == ["", ""])

            // A second player joins: the table has both; one leaves: it is gone at once.
            let (second, resource) = try await connect(relay, "whep", stream: "ft", direction: .recvonly)
            pcs.append(second)
            #expect(await playersConnected(2, "live/ft"), "\(log.value)")
            let two = try await table(relay, "live/ft")
            #expect(two.records == 2 && two.fast == 2 && two.rebuilds > one.rebuilds)
            #expect(try await http.send(method: "DELETE", url: relay.url + resource).status == 200)
            let back = try await table(relay, "live/ft")
            #expect(back.records == 1 && back.fast == 1)

            // Anything announced on the epoch (a path, keys, ids) makes the table again; counts
            // sent from it reach the sender's statistics by the next report.
            let remade = try await relay.loop.submit { [state = relay.state] () -> (Int, Int, Int) in
                guard let stream = state.value.streams["live/ft"], let record = stream.forwardingTable(.video).first else { return (0, 0, 0) }
                let before = stream.tableRebuilds
                let sent = record.sender.takeUnretainedValue().stats.packets
                record.output.pointee.unnotedPackets += 3
                record.output.pointee.unnotedBytes += 3000
                ForwardingEpoch.bump()
                _ = stream.forwardingTable(.video)
                _ = stream.forwardingTable(.video)
                return (stream.tableRebuilds - before, record.sender.takeUnretainedValue().stats.packets - sent, record.output.pointee.unnotedPackets)
            }
            #expect(remade.0 == 1 && remade.1 == 3 && remade.2 == 0)
        } catch {
            for pc in pcs { await pc.close() }
            await relay.stop()
            throw error
        }
        for pc in pcs { await pc.close() }
        await relay.stop()
    }
}
