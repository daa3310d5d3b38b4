import Testing
@testable import SDP

@Suite("Parse → serialize → parse")
struct RoundTripTests {
    static let fixtures = [Fixtures.chromiumOffer, Fixtures.srsAnswer, Fixtures.aiortcOffer, Fixtures.dataChannelOffer]

    @Test(arguments: fixtures)
    func realDescriptionsRoundTripByteForByte(_ text: String) throws {
        let parsed = try SessionDescription(parsing: text)
        // Each fixture is already in RFC order with CRLF, so the text comes back unchanged.
        #expect(parsed.serialize() == text)
        #expect(try SessionDescription(parsing: parsed.serialize()) == parsed)
    }

    @Test(arguments: fixtures)
    func bareLineFeedsAndTrailingBlankLines(_ text: String) throws {
        let lf = text.split(separator: "\r\n").joined(separator: "\n") + "\n\n  \n"
        #expect(!lf.contains("\r"))
        #expect(try SessionDescription(parsing: lf) == SessionDescription(parsing: text))
    }

    @Test func missingFinalNewlineIsAccepted() throws {
        let text = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0"
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.serialize() == text + "\r\n")
    }

    @Test func everyOptionalLineRoundTripsAndIsWrittenInRFCOrder() throws {
        // Out of RFC order on input (c= after b=, a= before z=): the writer puts it in order.
        let text = [
            "v=0",
            "o=jdoe 3724394400 3724394405 IN IP4 198.51.100.1",
            "s=Call to John Smith",
            "i=SDP Offer #1",
            "u=http://www.jdoe.example.com/home.html",
            "e=Jane Doe <jane@jdoe.example.com>",
            "e=second@example.com",
            "p=+1 617 555-6011",
            "b=AS:256",
            "c=IN IP4 198.51.100.1",
            "t=2873397496 2873404696",
            "r=7d 1h 0 25h",
            "t=0 0",
            "a=recvonly",
            "a=tool:x",
            "z=2882844526 -1h 2898848070 0",
            "k=clear:secret",
            "m=audio 49170/2 RTP/AVP 0",
            "i=the audio",
            "k=prompt",
            "b=TIAS:64000",
            "c=IN IP6 2001:db8::2/127",
            "a=ptime:20",
            "m=video 51372 RTP/AVP 99 31",
            "b=AS:512",
            "a=rtpmap:99 h263-1998/90000",
        ].joined(separator: "\n")
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.information == "SDP Offer #1")
        #expect(sdp.uri == "http://www.jdoe.example.com/home.html")
        #expect(sdp.emails == ["Jane Doe <jane@jdoe.example.com>", "second@example.com"])
        #expect(sdp.phones == ["+1 617 555-6011"])
        #expect(sdp.bandwidths == [Bandwidth(type: "AS", value: 256)])
        #expect(sdp.timing == [Timing(start: 2_873_397_496, stop: 2_873_404_696, repeats: ["7d 1h 0 25h"]),
                               Timing(start: 0, stop: 0)])
        #expect(sdp.timeZones == "2882844526 -1h 2898848070 0")
        #expect(sdp.encryptionKey == "clear:secret")
        #expect(sdp.direction == .recvonly)
        let audio = sdp.media[0]
        #expect(audio.port == 49170 && audio.portCount == 2)
        #expect(audio.information == "the audio")
        #expect(audio.encryptionKey == "prompt")
        #expect(audio.connection == Connection(netType: "IN", addrType: "IP6", address: "2001:db8::2/127"))
        #expect(audio.bandwidths == [Bandwidth(type: "TIAS", value: 64000)])
        #expect(audio.codecs == [Codec(payloadType: 0, name: "PCMU", clockRate: 8000, channels: 1)])
        #expect(sdp.media[1].codecs.map(\.name) == ["h263-1998", "H261"])

        let written = sdp.serialize()
        #expect(written.split(separator: "\r\n").map { String($0.prefix(2)) } == [
            "v=", "o=", "s=", "i=", "u=", "e=", "e=", "p=", "c=", "b=", "t=", "r=", "t=", "z=", "k=", "a=", "a=",
            "m=", "i=", "c=", "b=", "k=", "a=", "m=", "b=", "a=",
        ])
        #expect(try SessionDescription(parsing: written) == sdp)
    }

    @Test func unknownAttributesAndOddValuesAreKeptVerbatim() throws {
        let text = Fixtures.crlf([
            "v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=", "t=0 0",
            "a=x-custom:  spaced  value  ",
            "a=flag-only",
            "a=empty-value:",
            "a=colons:a:b:c",
            "m=audio 0 UDP/TLS/RTP/SAVPF",
            "a=x-unicode:héllo wörld ✓",
        ])
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.sessionName == "")
        #expect(sdp.attributes == [
            Attribute("x-custom", "  spaced  value  "), Attribute("flag-only"), Attribute("empty-value", ""),
            Attribute("colons", "a:b:c"),
        ])
        #expect(sdp.media[0].formats.isEmpty)
        #expect(sdp.media[0].value(of: "x-unicode") == "héllo wörld ✓")
        #expect(sdp.serialize() == text)
    }

    @Test func editedDescriptionRoundTrips() throws {
        var sdp = try SessionDescription(parsing: Fixtures.chromiumOffer)
        sdp.origin.sessionVersion += 1
        sdp.media[1].direction = .recvonly
        sdp.media[1].setFMTP("apt=96;rtx-time=3000", for: 97)
        sdp.media[0].candidates = []
        sdp.media[0].endOfCandidates = true
        let reparsed = try SessionDescription(parsing: sdp.serialize())
        #expect(reparsed == sdp)
        #expect(reparsed.origin.sessionVersion == 3)
        #expect(reparsed.media[1].direction == .recvonly)
        #expect(reparsed.media[1].fmtp[97] == "apt=96;rtx-time=3000")
        #expect(reparsed.media[0].candidates.isEmpty)
    }
}
