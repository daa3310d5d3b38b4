import Testing
@testable import STUN

@Suite struct SocketAddressTests {
    @Test func ipv4() throws {
        let a = try #require(SocketAddress(host: "1.2.3.4", port: 5))
        #expect(a.ip == .v4(0x0102_0304))
        #expect(a.host == "1.2.3.4")
        #expect(a.description == "1.2.3.4:5")
        #expect(a.isIPv4)
        #expect(!a.isLoopback)
        #expect(SocketAddress(host: "127.9.9.9", port: 1)?.isLoopback == true)
    }

    @Test func ipv6() throws {
        let a = try #require(SocketAddress(host: "::1", port: 5))
        #expect(a.description == "[::1]:5")
        #expect(a.isLoopback)
        #expect(!a.isIPv4)
        #expect(SocketAddress(host: "[2001:db8::1]", port: 1)?.host == "2001:db8::1")
        #expect(SocketAddress(host: "fe80::1%eth0", port: 1)?.isLinkLocal == true)
    }

    @Test func rejectsNames() {
        #expect(SocketAddress(host: "abcd-1234.local", port: 1) == nil)
        #expect(SocketAddress(host: "1.2.3", port: 1) == nil)
        #expect(SocketAddress(host: "", port: 1) == nil)
        #expect(SocketAddress(host: "::g", port: 1) == nil)
    }

    @Test func sockaddrRoundTrip() throws {
        for text in ["192.168.1.20", "2001:db8::42"] {
            let a = try #require(SocketAddress(host: text, port: 40000))
            let back = a.withSockAddr { pointer, _ in SocketAddress(sockaddr: pointer) }
            #expect(back == a)
        }
    }
}
