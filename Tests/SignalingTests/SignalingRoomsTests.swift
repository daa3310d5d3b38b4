import Testing
@testable import Signaling

/// The room core with no sockets: who hears what.
@Suite struct SignalingRoomsTests {
    @Test func secondPeerJoinsAndTheFirstIsToldToOffer() {
        var rooms = SignalingRooms()
        #expect(rooms.join(1, room: "r") == [.send(1, #"{"type":"joined","room":"r","peers":0}"#)])
        #expect(rooms.join(2, room: "r") == [.send(2, #"{"type":"joined","room":"r","peers":1}"#), .send(1, #"{"type":"peer-joined"}"#)])
        #expect(rooms.count(in: "r") == 2)
        // Another room is independent.
        #expect(rooms.join(3, room: "other") == [.send(3, #"{"type":"joined","room":"other","peers":0}"#)])
    }

    @Test func thirdPeerIsRefused() {
        var rooms = SignalingRooms()
        _ = rooms.join(1, room: "r")
        _ = rooms.join(2, room: "r")
        #expect(rooms.join(3, room: "r") == [.send(3, #"{"type":"error","error":"room full"}"#), .close(3, code: 1008, reason: "room full")])
        #expect(rooms.leave(3).isEmpty)
        #expect(rooms.count(in: "r") == 2)
    }

    /// The creator's key (or none) is the room's: a joiner with another, or none, gets neither
    /// the seat nor the offer, and learns nothing about who is there. An emptied room forgets it.
    @Test func theCreatorsKeyGuardsTheRoom() {
        var rooms = SignalingRooms()
        _ = rooms.join(1, room: "r", key: "key-of-the-room-1")
        let refused: [SignalingRooms.Output] = [.send(2, #"{"type":"error","error":"wrong room key"}"#), .close(2, code: 1008, reason: "wrong room key")]
        #expect(rooms.join(2, room: "r", key: "key-of-the-room-2") == refused)
        #expect(rooms.join(2, room: "r") == refused)
        #expect(rooms.count(in: "r") == 1)
        #expect(rooms.join(3, room: "r", key: "key-of-the-room-1") == [.send(3, #"{"type":"joined","room":"r","peers":1}"#),
                                                                      .send(1, #"{"type":"peer-joined"}"#)])
        #expect(rooms.receive(#"{"type":"offer","sdp":"v=0"}"#, from: 1) == [.send(3, #"{"type":"offer","sdp":"v=0"}"#)])
        // A room made without a key is not joined with one.
        _ = rooms.join(4, room: "open")
        #expect(rooms.join(5, room: "open", key: "key-of-the-room-1") == [.send(5, #"{"type":"error","error":"wrong room key"}"#),
                                                                          .close(5, code: 1008, reason: "wrong room key")])
        // Full and keyed: a stranger is told about the key, not that the room is full.
        #expect(rooms.join(6, room: "r") == [.send(6, #"{"type":"error","error":"wrong room key"}"#), .close(6, code: 1008, reason: "wrong room key")])
        _ = rooms.leave(1)
        _ = rooms.leave(3)
        #expect(rooms.join(7, room: "r", key: "another-key-for-r") == [.send(7, #"{"type":"joined","room":"r","peers":0}"#)])
    }

    @Test func forwardsPeerMessagesVerbatim() {
        var rooms = SignalingRooms()
        _ = rooms.join(1, room: "r")
        _ = rooms.join(2, room: "r")
        for text in [#"{ "type" : "offer", "sdp": "v=0\r\n", "extra": [1] }"#,
                     #"{"type":"answer","sdp":"v=0\r\n"}"#,
                     #"{"type":"candidate","candidate":"candidate:1 1 udp 2122260223 10.0.0.1 5000 typ host","sdpMid":"0","sdpMLineIndex":0}"#,
                     #"{"type":"candidate","sdp":"candidate:2 1 udp 1 10.0.0.2 5001 typ host","sdpMid":"0","sdpMLineIndex":0}"#,
                     #"{"type":"candidate","candidate":"","sdpMid":"0","sdpMLineIndex":0}"#,
                     #"{"type":"bye"}"#] {
            #expect(rooms.receive(text, from: 1) == [.send(2, text)])
            #expect(rooms.receive(text, from: 2) == [.send(1, text)])
        }
    }

    @Test(arguments: [
        ("{not json", "malformed JSON: expected one object per message"),
        ("[1,2]", "malformed JSON: expected one object per message"),
        (#"{"sdp":"v=0"}"#, #"missing \"type\""#),
        (#"{"type":"dance"}"#, #"unknown type \"dance\""#),
        (#"{"type":"offer"}"#, #"offer without a \"sdp\" string"#),
        (#"{"type":"candidate","sdpMid":"0"}"#, #"candidate without a \"candidate\" string"#),
        (#"{"type":"peer-left"}"#, "peer-left is sent by the server, not by peers"),
    ])
    func badMessagesGetAnErrorBack(text: String, why: String) {
        var rooms = SignalingRooms()
        _ = rooms.join(1, room: "r")
        _ = rooms.join(2, room: "r")
        #expect(rooms.receive(text, from: 1) == [.send(1, #"{"type":"error","error":"\#(why)"}"#)])
    }

    @Test func aloneInTheRoomNothingIsForwarded() {
        var rooms = SignalingRooms()
        _ = rooms.join(1, room: "r")
        #expect(rooms.receive(#"{"type":"bye"}"#, from: 1) == [.send(1, #"{"type":"error","error":"no peer in the room yet"}"#)])
    }

    @Test func leavingTellsTheOtherPeerAndFreesTheSeat() {
        var rooms = SignalingRooms()
        _ = rooms.join(1, room: "r")
        _ = rooms.join(2, room: "r")
        #expect(rooms.leave(1) == [.send(2, #"{"type":"peer-left"}"#)])
        #expect(rooms.join(3, room: "r") == [.send(3, #"{"type":"joined","room":"r","peers":1}"#), .send(2, #"{"type":"peer-joined"}"#)])
        #expect(rooms.leave(2) == [.send(3, #"{"type":"peer-left"}"#)])
        #expect(rooms.leave(3).isEmpty)
        #expect(rooms.count(in: "r") == 0)
    }

    @Test func roomNames() {
        #expect(SignalingRooms.validRoom("call-1_a.b") == "call-1_a.b")
        for bad in [nil, "", "a b", "é", String(repeating: "x", count: 65), "a/b"] as [String?] {
            #expect(SignalingRooms.validRoom(bad) == nil)
        }
    }
}

/// Seats that survive a lost connection (`seat=new`), on a fake clock.
@Suite struct SignalingSeatTests {
    static func seat(_ outputs: [SignalingRooms.Output]) -> String? {
        for case .send(_, let text) in outputs {
            if case .joined(_, _, let seat?, _)? = try? SignalMessage.parse(text) { return seat }
        }
        return nil
    }

    @Test func aDroppedPeerTakesItsSeatBackAndGetsWhatWasSent() throws {
        let t0 = ContinuousClock.now
        var rooms = SignalingRooms(rejoinGrace: .seconds(15))
        let token = try #require(Self.seat(rooms.join(1, room: "r", seat: "new")))
        #expect(token.count == 32)
        _ = rooms.join(2, room: "r", seat: "new")
        // 1's connection dies: 2 hears nothing, and what it sends is kept.
        #expect(rooms.leave(1, abrupt: true, now: t0).isEmpty)
        #expect(rooms.nextExpiry == t0 + .seconds(15))
        #expect(rooms.receive(#"{"type":"offer","sdp":"v=1"}"#, from: 2).isEmpty)
        #expect(rooms.receive(#"{"type":"candidate","candidate":"c","sdpMid":"0","sdpMLineIndex":0}"#, from: 2).isEmpty)
        // A third peer finds the room full: the seat is held.
        #expect(rooms.join(4, room: "r") == [.send(4, #"{"type":"error","error":"room full"}"#), .close(4, code: 1008, reason: "room full")])
        #expect(rooms.expire(now: t0 + .seconds(14)).isEmpty)
        // Back as peer 3 with the token: joined (rejoined), then what 2 sent, in order.
        #expect(rooms.join(3, room: "r", seat: token) == [
            .send(3, SignalMessage.joined(room: "r", peers: 1, seat: token, rejoined: true).json),
            .send(3, #"{"type":"offer","sdp":"v=1"}"#),
            .send(3, #"{"type":"candidate","candidate":"c","sdpMid":"0","sdpMLineIndex":0}"#)])
        #expect(rooms.nextExpiry == nil)
        #expect(rooms.receive(#"{"type":"answer","sdp":"v=1"}"#, from: 3) == [.send(2, #"{"type":"answer","sdp":"v=1"}"#)])
        #expect(rooms.receive(#"{"type":"bye"}"#, from: 2) == [.send(3, #"{"type":"bye"}"#)])
        // The old connection's late goodbye changes nothing.
        #expect(rooms.leave(1).isEmpty)
        #expect(rooms.count(in: "r") == 2)
    }

    @Test func unclaimedSeatsExpireIntoPeerLeft() throws {
        let t0 = ContinuousClock.now
        var rooms = SignalingRooms(rejoinGrace: .seconds(15))
        let token = try #require(Self.seat(rooms.join(1, room: "r", seat: "new")))
        _ = rooms.join(2, room: "r")
        _ = rooms.leave(1, abrupt: true, now: t0)
        #expect(rooms.expire(now: t0 + .seconds(15)) == [.send(2, #"{"type":"peer-left"}"#)])
        #expect(rooms.count(in: "r") == 1)
        // Too late: the token joins as a newcomer (a new seat, not rejoined); 2 is told to offer.
        let late = rooms.join(3, room: "r", seat: token)
        let newToken = try #require(Self.seat(late))
        #expect(newToken != token)
        #expect(late == [.send(3, SignalMessage.joined(room: "r", peers: 1, seat: newToken).json), .send(2, #"{"type":"peer-joined"}"#)])
    }

    @Test func aTokenTakesOverASeatWhoseDeadConnectionTheServerHasNotNoticed() throws {
        var rooms = SignalingRooms()
        let token = try #require(Self.seat(rooms.join(1, room: "r", seat: "new")))
        _ = rooms.join(2, room: "r")
        #expect(rooms.join(3, room: "r", seat: token) == [
            .send(3, SignalMessage.joined(room: "r", peers: 1, seat: token, rejoined: true).json),
            .close(1, code: 1000, reason: "the seat was taken back by a new connection")])
        #expect(rooms.leave(1, abrupt: true).isEmpty)
        #expect(rooms.receive(#"{"type":"bye"}"#, from: 2) == [.send(3, #"{"type":"bye"}"#)])
    }

    @Test func withoutASeatOrWithAGoodbyeThePeerLeavesAtOnce() {
        var rooms = SignalingRooms()
        _ = rooms.join(1, room: "r")
        _ = rooms.join(2, room: "r", seat: "new")
        #expect(rooms.leave(1, abrupt: true) == [.send(2, #"{"type":"peer-left"}"#)])
        _ = rooms.join(3, room: "r")
        #expect(rooms.leave(2, abrupt: false) == [.send(3, #"{"type":"peer-left"}"#)])
        // A wrong token is only a newcomer (the room's key still applies).
        #expect(rooms.join(4, room: "r", seat: "0123456789abcdef0123456789abcdef").count == 2)
    }

    @Test func aLongAbsenceKeepsTheNewestMessages() throws {
        var rooms = SignalingRooms()
        let token = try #require(Self.seat(rooms.join(1, room: "r", seat: "new")))
        _ = rooms.join(2, room: "r")
        _ = rooms.leave(1, abrupt: true)
        for i in 0..<(SignalingRooms.maxQueuedMessages + 10) {
            _ = rooms.receive(#"{"type":"offer","sdp":"v=\#(i)"}"#, from: 2)
        }
        let back = rooms.join(3, room: "r", seat: token)
        #expect(back.count == 1 + SignalingRooms.maxQueuedMessages)
        #expect(back.last == .send(3, #"{"type":"offer","sdp":"v=\#(SignalingRooms.maxQueuedMessages + 9)"}"#))
    }
}

@Suite struct SignalMessageTests {
    @Test func encodesInTheProtocolsShape() {
        #expect(SignalMessage.offer(sdp: "v=0\r\n\"q\"").json == #"{"type":"offer","sdp":"v=0\r\n\"q\""}"#)
        #expect(SignalMessage.candidate(candidate: "candidate:1", sdpMid: "0", sdpMLineIndex: 0).json
                == #"{"type":"candidate","candidate":"candidate:1","sdpMid":"0","sdpMLineIndex":0}"#)
        #expect(SignalMessage.candidate(candidate: "", sdpMid: nil, sdpMLineIndex: nil).json
                == #"{"type":"candidate","candidate":"","sdpMid":null,"sdpMLineIndex":null}"#)
        #expect(SignalMessage.error("a\u{1}b").json == #"{"type":"error","error":"a\u0001b"}"#)
    }

    @Test func parsesBothCandidateKeysAndRoundTrips() throws {
        #expect(try SignalMessage.parse(#"{"type":"candidate","sdp":"candidate:9","sdpMid":"1","sdpMLineIndex":1}"#)
                == .candidate(candidate: "candidate:9", sdpMid: "1", sdpMLineIndex: 1))
        #expect(try SignalMessage.parse(#"{"type":"candidate","candidate":"","sdpMid":null}"#)
                == .candidate(candidate: "", sdpMid: nil, sdpMLineIndex: nil))
        let all: [SignalMessage] = [.joined(room: "r", peers: 1), .joined(room: "r", peers: 0, seat: "ab12"),
                                    .joined(room: "r", peers: 1, seat: "ab12", rejoined: true), .peerJoined, .offer(sdp: "v=0"), .answer(sdp: "v=0"),
                                    .candidate(candidate: "candidate:1", sdpMid: "0", sdpMLineIndex: 0), .bye, .peerLeft, .error("x")]
        for message in all { #expect(try SignalMessage.parse(message.json) == message) }
    }

    @Test func clientEvents() {
        #expect(SignalingClient.event(#"{"type":"candidate","candidate":"","sdpMid":"0","sdpMLineIndex":0}"#) == .endOfCandidates)
        #expect(SignalingClient.event(#"{"type":"candidate","sdp":"candidate:1","sdpMid":"0","sdpMLineIndex":0}"#)
                == .candidate("candidate:1", sdpMid: "0", sdpMLineIndex: 0))
        #expect(SignalingClient.event(#"{"type":"joined","room":"r","peers":0}"#) == .joined(peers: 0))
        #expect(SignalingClient.event(#"{"type":"joined","room":"r","peers":1,"seat":"ab","rejoined":true}"#) == .rejoined(peers: 1))
        #expect(SignalingClient.event("nope") == .error("unreadable message from the server (malformed JSON: expected one object per message): nope"))
    }
}
