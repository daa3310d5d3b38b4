import Testing
import STUN
@testable import ICE

@Suite struct RestartTests {
    /// Both agents restart as JSEP orders it: the offerer (a) first, then the answerer (b)
    /// with both sides' new credentials, then a learns b's.
    @Test(arguments: [ICERole.controlling, .controlled])
    func restartKeepsThePathUntilNewChecksSelectOne(offererRole: ICERole) throws {
        let p = AgentPair(aRole: offererRole, bRole: offererRole == .controlling ? .controlled : .controlling)
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        let old = try #require(p.a.selectedPair)
        let aNew = ICECredentials(ufrag: "AAAA", pwd: "AAAAAAAAAAAAAAAAAAAAAAAA")
        let bNew = ICECredentials(ufrag: "BBBB", pwd: "BBBBBBBBBBBBBBBBBBBBBBBB")
        let sentBefore = p.network.sent.count

        p.a.restart(local: aNew, now: p.network.now)
        // Media may go on meanwhile: the old path is still the selected one, nothing is checked yet.
        #expect(p.a.selectedPair?.local == old.local && p.a.selectedPair?.remote == old.remote)
        #expect(p.a.remoteCredentials == nil && p.a.stats.pairs.isEmpty)
        #expect(p.a.localCredentials == aNew)
        p.network.run(for: .milliseconds(200))
        #expect(p.a.state == .connected || p.a.state == .completed, "no failure while the answer is out")

        p.b.restart(local: bNew, now: p.network.now)
        p.b.setRemoteCredentials(aNew, remoteIsLite: false, now: p.network.now)
        for c in p.a.localCandidates { p.b.addRemoteCandidate(c, now: p.network.now) }
        p.a.setRemoteCredentials(bNew, remoteIsLite: false, now: p.network.now)
        for c in p.b.localCandidates { p.a.addRemoteCandidate(c, now: p.network.now) }
        #expect(p.network.run(for: .seconds(5)) {
            p.a.stats.pairs.contains { $0.selected && $0.nominated } && p.b.stats.pairs.contains { $0.selected && $0.nominated }
        })
        #expect(p.selectionsMatch)
        #expect(p.bothConnected)
        #expect(!p.network.states(of: p.a).contains(.disconnected) && !p.network.states(of: p.b).contains(.failed))
        // The checks after the restart carry the new usernames only.
        let usernames = p.network.sent.dropFirst(sentBefore).compactMap { $0.message?.username }
        #expect(!usernames.isEmpty && usernames.allSatisfy { $0 == "BBBB:AAAA" || $0 == "AAAA:BBBB" }, "\(Set(usernames))")
        #expect(p.network.events(of: p.a).filter { if case .selectedPairChanged = $0 { return true }; return false }.count == 2)
        // Consent runs on with the new credentials.
        #expect(!p.network.run(for: .seconds(40)) { p.a.state == .failed || p.b.state == .failed })
    }

    /// The peer restarts and we answer with new credentials, but its connection to our address
    /// keeps our old ufrag (Chromium does not pair a new remote candidate at an address it already
    /// has a selected connection to). Its checks name our previous ufrag with its new one: they
    /// are answered, and ours on that pair name the previous ufrag too, so both select it again.
    @Test func aPeerStillNamingOurPreviousUfragAfterItsRestartIsAnswered() throws {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        let aOld = p.a.localCredentials
        let aNew = ICECredentials(ufrag: "AAAA", pwd: "AAAAAAAAAAAAAAAAAAAAAAAA")
        let bNew = ICECredentials(ufrag: "BBBB", pwd: "BBBBBBBBBBBBBBBBBBBBBBBB")
        let sentBefore = p.network.sent.count
        // b offers the restart; a answers it with new credentials of its own.
        p.b.restart(local: bNew, now: p.network.now)
        p.a.restart(local: aNew, now: p.network.now)
        p.a.setRemoteCredentials(bNew, remoteIsLite: false, now: p.network.now)
        for c in p.b.localCandidates { p.a.addRemoteCandidate(c, now: p.network.now) }
        // b's connection goes on naming a's old ufrag.
        p.b.setRemoteCredentials(aOld, remoteIsLite: false, now: p.network.now)
        for c in p.a.localCandidates { p.b.addRemoteCandidate(c, now: p.network.now) }
        #expect(p.network.run(for: .seconds(5)) {
            p.a.stats.pairs.contains { $0.selected && $0.nominated } && p.b.stats.pairs.contains { $0.selected && $0.nominated }
        })
        #expect(p.selectionsMatch)
        let usernames = Set(p.network.sent.dropFirst(sentBefore).compactMap { $0.message?.username })
        #expect(usernames.contains("aaaa:BBBB") && usernames.contains("BBBB:aaaa"), "\(usernames)")
        #expect(p.a.stats.droppedUnauthorized == 0)
        // Consent runs on under the old ufrag.
        #expect(!p.network.run(for: .seconds(40)) { p.a.state == .failed || p.b.state == .failed })
    }

    /// Our previous ufrag counts only with the peer's current one: a check from before the
    /// peer's restart too (both old) is refused.
    @Test func theGenerationBeforeOnBothSidesIsRefused() throws {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        let (aOld, bOld) = (p.a.localCredentials, p.b.localCredentials)
        p.a.restart(local: ICECredentials(ufrag: "AAAA", pwd: "AAAAAAAAAAAAAAAAAAAAAAAA"), now: p.network.now)
        p.a.setRemoteCredentials(ICECredentials(ufrag: "BBBB", pwd: "BBBBBBBBBBBBBBBBBBBBBBBB"), remoteIsLite: false, now: p.network.now)
        #expect(p.a.credentials(named: ["\(aOld.ufrag)", "BBBB"]) == aOld)
        #expect(p.a.credentials(named: ["\(aOld.ufrag)", "\(bOld.ufrag)"]) == nil)
        #expect(p.a.credentials(named: ["AAAA", "\(bOld.ufrag)"])?.ufrag == "AAAA")
    }
}
