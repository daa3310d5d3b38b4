import DTLS
import ICE
import PeerConnection
import Testing

@Suite("DTLS and ICE states under their W3C names")
struct DtlsStateTests {
    @Test("every state of the DTLS and ICE machines has its W3C enum case")
    func names() {
        let dtls: [DTLSState] = [.new, .connecting, .connected, .closed, .failed]
        #expect(dtls.map { DtlsTransportState($0).rawValue } == ["new", "connecting", "connected", "closed", "failed"])
        let ice: [ICEConnectionState] = [.new, .checking, .connected, .completed, .failed, .disconnected, .closed]
        #expect(ice.map { IceConnectionState($0).rawValue } == ["new", "checking", "connected", "completed", "failed", "disconnected", "closed"])
    }

    @Test("dtlsState is new, then connected (getStats says the same), then closed by close()")
    func lifecycle() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        #expect(a.dtlsState == .new)
        try await a.addTransceiver(.audio)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        #expect(a.dtlsState == .connected)
        let transport = try #require(await a.getStats().ofType("transport").first)
        #expect(transport["dtlsState"] == .string("connected") && transport["iceState"] == .string(a.iceConnectionState.rawValue))
        await a.close()
        #expect(a.dtlsState == .closed)
        await b.close()
        // Closed before it ever had a transport: nothing was started, nothing to close.
        let idle = try loopbackPeer()
        await idle.close()
        #expect(idle.dtlsState == .new)
    }
}
