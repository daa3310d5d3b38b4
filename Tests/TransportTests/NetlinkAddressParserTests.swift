import STUN
import Testing
import TestSupport
@testable import Transport

/// The rtnetlink address parser on datagrams a real kernel sent (Debian 12, Linux 6.1, x86-64).
/// Captured as root inside `unshare --net` from a NETLINK_ROUTE socket bound to
/// RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR while running, in order:
///   ip link set lo up; ip addr add/del 127.0.0.5/8 dev lo; ip addr add/del 10.9.0.1/32 dev lo;
///   ip -6 addr add/del fd00::5/64 dev lo; ip link add v0 type veth peer name v1;
///   ip addr add 192.168.77.1/24 dev v0; ip -6 addr add 2001:db8::1/64 dev v0 (link down);
///   ip link set v0 up; ip link set v1 up; ip link del v0
/// and a RTM_GETADDR dump request on a second socket (its multi-part reply).
@Suite struct NetlinkAddressParserTests {
    enum Vector {
        static let loUp = [
            "4c000000140000000000000000000000020880fe01000000080001007f000001080002007f000001070003006c6f0000080008008000000014000600ffffffffffffffff62960f0062960f00",
            "500000001400000000000000000000000a8080fe01000000140001000000000000000000000000000000000114000600ffffffffffffffff62960f0062960f00080008008000000005000b0001000000",
        ]
        static let add127_0_0_5 = "4c0000001400000042910f6bea4e0000020881fe01000000080001007f000005080002007f000005070003006c6f0000080008008100000014000600ffffffffffffffff96960f0096960f00"
        static let del127_0_0_5 = "4c0000001500000043910f6bf54e0000020881fe01000000080001007f000005080002007f000005070003006c6f0000080008008100000014000600ffffffffffffffff96960f0096960f00"
        static let add10_9_0_1 = "4c0000001400000043910f6b014f00000220800001000000080001000a090001080002000a090001070003006c6f0000080008008000000014000600ffffffffffffffff00970f0000970f00"
        static let del10_9_0_1 = "4c0000001500000044910f6b0a4f00000220800001000000080001000a090001080002000a090001070003006c6f0000080008008000000014000600ffffffffffffffff00970f0000970f00"
        /// Tentative first (duplicate address detection), then usable.
        static let addFd00_5 = [
            "480000001400000000000000000000000a40c0000100000014000100fd00000000000000000000000000000514000600ffffffffffffffff6b970f006b970f0008000800c0000000",
            "480000001400000000000000000000000a4080000100000014000100fd00000000000000000000000000000514000600ffffffffffffffff6b970f006b970f000800080080000000",
        ]
        static let delFd00_5 = "480000001500000000000000000000000a4080000100000014000100fd00000000000000000000000000000514000600ffffffffffffffff6b970f006b970f000800080080000000"
        static let addOnDownVeth = [
            "4c0000001400000045910f6b284f0000021880000300000008000100c0a84d0108000200c0a84d010700030076300000080008008000000014000600ffffffffffffffffda970f00da970f00",
            "480000001400000000000000000000000a40c000030000001400010020010db800000000000000000000000114000600ffffffffffffffff0d980f000d980f0008000800c0000000",
        ]
        static let vethUp = [
            "500000001400000000000000000000000a4080fd0300000014000100fe80000000000000a8f479fffea0c23414000600ffffffffffffffff43980f0043980f00080008008000000005000b0003000000",
            "480000001400000000000000000000000a408000030000001400010020010db800000000000000000000000114000600ffffffffffffffff0d980f000d980f000800080080000000",
            "500000001400000000000000000000000a4080fd0200000014000100fe80000000000000482b09fffed83a0914000600ffffffffffffffff43980f0043980f00080008008000000005000b0003000000",
        ]
        static let vethDeleted = [
            "480000001500000000000000000000000a408000030000001400010020010db800000000000000000000000114000600ffffffffffffffff0d980f000d980f000800080080000000",
            "500000001500000000000000000000000a4080fd0300000014000100fe80000000000000a8f479fffea0c23414000600ffffffffffffffff43980f0043980f00080008008000000005000b0003000000",
            "500000001500000000000000000000000a4080fd0200000014000100fe80000000000000482b09fffed83a0914000600ffffffffffffffff43980f0043980f00080008008000000005000b0003000000",
            "4c000000150000000000000000000000021880000300000008000100c0a84d0108000200c0a84d010700030076300000080008008000000014000600ffffffffffffffffda970f00da970f00",
        ]
        /// Two messages in one datagram (NLM_F_MULTI), then NLMSG_DONE alone.
        static let dump = [
            "4c000000140002000100000009f587a0020880fe01000000080001007f000001080002007f000001070003006c6f0000080008008000000014000600ffffffffffffffff62960f0062960f0050000000140002000100000009f587a00a8080fe01000000140001000000000000000000000000000000000114000600ffffffffffffffff62960f0062960f00080008008000000005000b0001000000",
            "14000000030002000100000009f587a000000000",
        ]
    }

    func v4(_ text: String, _ prefix: UInt8, _ index: UInt32) -> InterfaceAddress {
        InterfaceAddress(ip: SocketAddress(host: text, port: 0)?.ip ?? .v4(0), prefixLength: prefix, interfaceIndex: index)
    }

    func v6(_ text: String, _ prefix: UInt8, _ index: UInt32) -> InterfaceAddress {
        InterfaceAddress(ip: SocketAddress(host: text, port: 0)?.ip ?? .v6([]), prefixLength: prefix, interfaceIndex: index)
    }

    func events(_ datagrams: [String]) -> [InterfaceEvent] {
        datagrams.flatMap { datagram -> [InterfaceEvent] in
            let result = NetlinkAddressParser.parse(hex(datagram))
            #expect(result.malformed == 0 && !result.overrun, "\(datagram)")
            return result.events
        }
    }

    @Test func ipv4AddressesAddedAndRemoved() {
        #expect(events([Vector.add127_0_0_5]) == [.added(v4("127.0.0.5", 8, 1))], "a secondary address is an address")
        #expect(events([Vector.del127_0_0_5]) == [.removed(v4("127.0.0.5", 8, 1))])
        #expect(events([Vector.add10_9_0_1]) == [.added(v4("10.9.0.1", 32, 1))])
        #expect(events([Vector.del10_9_0_1]) == [.removed(v4("10.9.0.1", 32, 1))])
        #expect(events(Vector.loUp) == [.added(v4("127.0.0.1", 8, 1)), .added(v6("::1", 128, 1))])
    }

    @Test func ipv6IsAddedOnlyOnceDuplicateAddressDetectionIsDone() {
        #expect(events(Vector.addFd00_5) == [.removed(v6("fd00::5", 64, 1)), .added(v6("fd00::5", 64, 1))])
        #expect(events([Vector.delFd00_5]) == [.removed(v6("fd00::5", 64, 1))])
        // On a link that is down DAD waits: the IPv4 address is there, the IPv6 one not yet.
        #expect(events(Vector.addOnDownVeth) == [.added(v4("192.168.77.1", 24, 3)), .removed(v6("2001:db8::1", 64, 3))])
        #expect(events(Vector.vethUp) == [.added(v6("fe80::a8f4:79ff:fea0:c234", 64, 3)), .added(v6("2001:db8::1", 64, 3)),
                                          .added(v6("fe80::482b:9ff:fed8:3a09", 64, 2))])
        #expect(events(Vector.vethDeleted).map { if case .removed = $0 { true } else { false } } == [true, true, true, true])
    }

    @Test func aDumpReplyCarriesSeveralMessagesAndEndsWithDone() {
        #expect(events(Vector.dump) == [.added(v4("127.0.0.1", 8, 1)), .added(v6("::1", 128, 1))])
    }

    @Test func theSetTurnsTheWholeCaptureIntoChanges() {
        var set = InterfaceAddressSet()
        let all = [Vector.loUp, [Vector.add127_0_0_5, Vector.del127_0_0_5, Vector.add10_9_0_1], Vector.addFd00_5,
                   Vector.addOnDownVeth, Vector.vethUp, Vector.dump].flatMap { $0 }
        let changes = events(all).compactMap { set.apply($0) }
        #expect(changes == [
            .added(v4("127.0.0.1", 8, 1)), .added(v6("::1", 128, 1)), .added(v4("127.0.0.5", 8, 1)), .removed(v4("127.0.0.5", 8, 1)),
            .added(v4("10.9.0.1", 32, 1)),
            .added(v6("fd00::5", 64, 1)),   // its tentative message removed nothing
            .added(v4("192.168.77.1", 24, 3)),
            .added(v6("fe80::a8f4:79ff:fea0:c234", 64, 3)), .added(v6("2001:db8::1", 64, 3)), .added(v6("fe80::482b:9ff:fed8:3a09", 64, 2)),
            // the dump repeats what is known: nothing
        ])
        // A listing after lost messages: what went away, then what came.
        let resync = set.resync(to: [v4("127.0.0.1", 8, 1), v4("10.9.0.2", 32, 1)])
        #expect(resync.filter { if case .removed = $0 { true } else { false } }.count == 7)
        #expect(resync.last == .added(v4("10.9.0.2", 32, 1)))
        #expect(Set(set.addresses.values) == [v4("127.0.0.1", 8, 1), v4("10.9.0.2", 32, 1)])
    }

    @Test func gatherableAddresses() {
        #expect(v4("127.0.0.5", 8, 1).isGatherable(includeIPv6: false))
        #expect(v4("10.9.0.1", 32, 1).isGatherable(includeIPv6: false))
        #expect(!v4("0.0.0.0", 0, 1).isGatherable(includeIPv6: true))
        #expect(!v6("2001:db8::1", 64, 3).isGatherable(includeIPv6: false))
        #expect(v6("2001:db8::1", 64, 3).isGatherable(includeIPv6: true))
        #expect(!v6("fe80::a8f4:79ff:fea0:c234", 64, 3).isGatherable(includeIPv6: true), "link-local needs a scope id")
    }

    @Test func everyTruncationIsCountedNotTrapped() {
        let message = hex(Vector.add127_0_0_5)
        for length in 0..<message.count {
            let result = NetlinkAddressParser.parse(Array(message.prefix(length)))
            #expect(result.events.isEmpty)
            #expect(result.malformed == (length == 0 ? 0 : 1), "\(length) bytes")
        }
        // Two messages, the second cut short: the first still counts.
        let two = hex(Vector.add10_9_0_1) + message.prefix(40)
        let result = NetlinkAddressParser.parse(two)
        #expect(result.events == [.added(v4("10.9.0.1", 32, 1))] && result.malformed == 1)
    }

    @Test func lyingLengthsAndSizesAreMalformed() {
        var message = hex(Vector.add127_0_0_5)
        // nlmsg_len past the datagram, and below the header's own size.
        for bad: UInt32 in [0xffff_ffff, 77, 15, 0] {
            var m = message
            withUnsafeBytes(of: bad) { for i in 0..<4 { m[i] = $0[i] } }
            #expect(NetlinkAddressParser.parse(m).malformed == 1, "nlmsg_len \(bad)")
        }
        // An attribute length of 0 (it would never advance) and one past the message.
        for bad: UInt16 in [0, 3, 0x100] {
            var m = message
            withUnsafeBytes(of: bad) { for i in 0..<2 { m[24 + i] = $0[i] } }
            #expect(NetlinkAddressParser.parse(m) == NetlinkAddressParser.Result(events: [], malformed: 1), "rta_len \(bad)")
        }
        // IFA_LOCAL of 3 bytes in an IPv4 message.
        message[32] = 7
        #expect(NetlinkAddressParser.parse(message).malformed == 1)
    }

    @Test func otherFamiliesAndMessagesAreSkipped() {
        var message = hex(Vector.add127_0_0_5)
        message[16] = 7   // AF_BRIDGE: attributes of no family we read
        #expect(NetlinkAddressParser.parse(message) == NetlinkAddressParser.Result())
        // NLMSG_OVERRUN: messages were dropped, the caller must list the addresses again.
        let overrun: [UInt8] = [20, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        #expect(NetlinkAddressParser.parse(overrun).overrun)
    }

    @Test func fuzzEntryTakesTheVectorsAndNoise() {
        for datagram in Vector.loUp + Vector.addFd00_5 + Vector.vethUp + Vector.vethDeleted + Vector.dump {
            fuzzNetlinkAddresses(hex(datagram))
        }
        // Bytes of a real message changed at random (a fixed xorshift, so every run is the same).
        var state: UInt64 = 21
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let base = hex(Vector.add127_0_0_5)
        for _ in 0..<2000 {
            var bytes = base
            for _ in 0..<Int(next() % 4) + 1 { bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next()) }
            fuzzNetlinkAddresses(bytes)
        }
    }
}
