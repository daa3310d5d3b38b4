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
            let same = try await relay.loop.submit { [state = relay.state] () -> [Bool] in
                guard let stream = state.value.streams["live/ft"], let record = stream.forwardingTable(.video).first,
                      let plain = record.target else { return [] }
                let sender = record.sender.takeUnretainedValue()
                guard sender.absSendTimeExtensionID != nil, plain.absSendTimeID != 0 else { return [false] }
                let source = RTPPacket(marker: true, payloadType: 102, sequenceNumber: 1234, timestamp: 5678, ssrc: 42, csrcs: [7],
                                       extensions: [RTPHeaderExtension(id: 1, data: Array("0".utf8)), RTPHeaderExtension(id: 13, data: [0x02])],
                                       payload: Array(repeating: 0x5A, count: 1100), paddingLength: 2).serialize()
                /// Each datagram sent through `target` then through the sender, twice: without
                /// the transport-wide sequence number and the tag, and that number.
                func sent(_ target: RtpForwardingTarget) -> [(rest: [UInt8], sequence: UInt16?)] {
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
                    guard case .sent = outcome, forwarded, fast.count == 2, slow.count == 2 else { return [] }
                    // Both carry the send time (the header is in the clear under SRTP).
                    let stamped = (0..<2).flatMap { [fast.queued($0)!, slow.queued($0)!] }.allSatisfy { datagram in
                        datagram.bytes.withUnsafeBytes { (try? RTPHeaderView($0).extensionRange(id: target.absSendTimeID))?.count == 3 }
                    }
                    guard stamped else { return [] }
                    return (0..<2).flatMap { [fast.queued($0)!, slow.queued($0)!] }.map { datagram in
                        var bytes = datagram.bytes
                        let name = withUnsafeBytes(of: datagram.nameLength) { Array($0) }
                        guard let id = sender.transportCCExtensionID,
                              let range = bytes.withUnsafeBytes({ try? RTPHeaderView($0).extensionRange(id: id) }), range.count == 2
                        else { return (bytes + name, nil) }
                        let sequence = UInt16(bytes[range.lowerBound]) << 8 | UInt16(bytes[range.lowerBound + 1])
                        bytes.replaceSubrange(range, with: [0, 0])
                        return (Array(bytes.dropLast(Int(target.overhead))) + name, sequence)
                    }
                }
                let without = sent(plain)
                sender.transportCCExtensionID = 9
                defer { sender.transportCCExtensionID = nil }
                guard let stamping = sender.forwardingTarget()?.target else { return [] }
                let with = sent(stamping)
                return [without.count == 4 && without[0].rest == without[1].rest && without[2].rest == without[3].rest
                            && without.allSatisfy { $0.sequence == nil },
                        with.count == 4 && with[0].rest == with[1].rest && with[2].rest == with[3].rest
                            && zip(with, with.dropFirst()).allSatisfy { a, b in a.sequence.map { b.sequence == $0 &+ 1 } ?? false }]
            }
            #expect(same == [true, true])

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
