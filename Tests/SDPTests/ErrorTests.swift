import Testing
@testable import SDP

@Suite("Errors name the line and the problem")
struct ErrorTests {
    static let head = ["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0"]

    func parseError(_ lines: [String]) -> SDPError? {
        do {
            _ = try SessionDescription(parsing: Fixtures.crlf(lines))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        // Structure.
        (["v=0", "o=- 1 1 IN IP4 0.0.0.0", "garbage"], 3, #"expected "<type>=<value>""#),
        (["v=0", "", "s=-"], 2, #"expected "<type>=<value>""#),
        (["v=0", " o=- 1 1 IN IP4 0.0.0.0"], 2, #"expected "<type>=<value>""#),
        (["o=- 1 1 IN IP4 0.0.0.0", "v=0"], 1, "v= must come first"),
        (head + ["v=0"], 5, "v= may appear only once, as the first line"),
        (["v=1"], 1, "v= version 1 is not supported (only 0)"),
        (["v=zero"], 1, #"v= version "zero" is not a number"#),
        (["v=0", "o=- 1 1 IN IP4 0.0.0.0", "x=1"], 3, #"unknown line type "x""#),
        (head + ["X=1"], 5, #"unknown line type "X""#),
        (head + ["s=again"], 5, "duplicate s= line"),
        (head + ["m=audio 9 RTP/AVP 0", "t=0 0"], 6, "t= is a session-level line and must come before the first m= line"),
        (head + ["m=audio 9 RTP/AVP 0", "c=IN IP4 1.2.3.4", "c=IN IP4 1.2.3.4"], 7, "duplicate c= line in a media section"),
        (["v=0", "r=1d 1h 0"], 2, "r= must follow a t= line"),
        // Required lines.
        (["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-"], 4, "missing required t= line"),
        (["v=0", "s=-", "t=0 0", "m=audio 9 RTP/AVP 0"], 4, "missing required o= line"),
        (["v=0", "o=- 1 1 IN IP4 0.0.0.0", "t=0 0"], 4, "missing required s= line"),
        // Fixed-format lines.
        (["v=0", "o=- 1 IN IP4 0.0.0.0"], 2,
         #"o= needs 6 fields "<username> <sess-id> <sess-version> <nettype> <addrtype> <address>", got 5"#),
        (["v=0", "o=- 1 two IN IP4 0.0.0.0"], 2, #"o= session version "two" is not a number"#),
        (head + ["c=IN IP4"], 5, #"c= needs 3 fields "<nettype> <addrtype> <address>", got 2"#),
        (head + ["b=AS"], 5, #"b= must be "<bwtype>:<bandwidth>""#),
        (head + ["b=AS:lots"], 5, #"b= bandwidth "lots" is not a number"#),
        (["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0"], 4, #"t= needs 2 fields "<start-time> <stop-time>", got 1"#),
        (["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=now 0"], 4, #"t= start time "now" is not a number"#),
        (head + ["m=audio 9"], 5, #"m= needs "<media> <port> <proto> <fmt> ...", got 2 fields"#),
        (head + ["a=mid:0", "m=audio 9 RTP/AVP 0", "a=rtcp-mux", "m=video abc RTP/AVP 96"], 8, #"m= port "abc" is not a number"#),
        (head + ["m=audio 70000 RTP/AVP 0"], 5, "m= port 70000 out of range"),
        (head + ["m=audio 9/x RTP/AVP 0"], 5, #"m= port count "x" is not a number from 1 to 65535"#),
        // Attributes.
        (head + ["a=:x"], 5, "attribute name is empty"),
        (head + ["a=na me:x"], 5, #"attribute name "na me" is not a token"#),
        (head + ["m=audio 9 RTP/AVP 0"] + Array(repeating: "a=rtcp-mux", count: 6) + ["a=rtpmap:300 foo/8000"], 12,
         "rtpmap payload type 300 out of range"),
        (head + ["a=rtpmap:x foo/8000"], 5, #"rtpmap payload type "x" is not a number"#),
        (head + ["a=rtpmap:96 VP8"], 5, #"rtpmap encoding "VP8" is not "<name>/<clock rate>[/<channels>]""#),
        (head + ["a=rtpmap:96 VP8/fast"], 5, #"rtpmap clock rate "fast" is not a number"#),
        (head + ["a=rtpmap:96"], 5, #"rtpmap "96" is not "<payload type> <encoding name>/<clock rate>[/<channels>]""#),
        (head + ["a=rtpmap"], 5, "a=rtpmap needs a value"),
        (head + ["a=fmtp:128 apt=96"], 5, "fmtp payload type 128 out of range"),
        (head + ["a=rtcp-fb:96"], 5, #"rtcp-fb "96" is not "<payload type> <type>[ <parameter>]""#),
        (head + ["a=rtcp-fb:any nack"], 5, #"rtcp-fb payload type "any" is not a number"#),
        (head + ["a=extmap:0 urn:x"], 5, "extmap id 0 out of range (1-255)"),
        (head + ["a=extmap:1/sideways urn:x"], 5,
         #"extmap direction "sideways" is not sendrecv, sendonly, recvonly or inactive"#),
        (head + ["a=extmap:1"], 5, #"extmap "1" is not "<id>[/<direction>] <uri>[ <attributes>]""#),
        (head + ["a=ssrc:4294967296 cname:x"], 5, "ssrc SSRC 4294967296 out of range"),
        (head + ["a=ssrc:12"], 5, #"ssrc "12" is not "<ssrc> <attribute>[:<value>]""#),
        (head + ["a=ssrc-group:FID 1 x"], 5, #"ssrc-group SSRC "x" is not a number"#),
        (head + ["a=msid:a b c"], 5, #"msid "a b c" is not "<stream id>[ <track id>]""#),
        (head + ["a=rid:h"], 5, #"rid "h" is not "<id> send|recv[ <parameters>]""#),
        (head + ["a=rid:h! send"], 5, #"rid id "h!" is not letters, digits, - and _"#),
        (head + ["a=rid:h sideways"], 5, #"rid h direction "sideways" is not send or recv"#),
        (head + ["a=rid:h send max-width=1280;pt=96"], 5, "rid h: pt= must come first and list payload types"),
        (head + ["a=rid:h send pt=96,x"], 5, #"rid pt payload type "x" is not a number"#),
        (head + ["a=simulcast:send"], 5, #"simulcast "send" is not "send|recv <streams>[ send|recv <streams>]""#),
        (head + ["a=simulcast:send h;;l"], 5, #"simulcast stream "" is not a rid (letters, digits, - and _, ~ to pause)"#),
        (head + ["a=simulcast:send h recv"], 5, #"simulcast "send h recv" is not "send|recv <streams>[ send|recv <streams>]""#),
        (head + ["a=simulcast:send h send l"], 5, #"simulcast direction "send" is not send or recv (each at most once)"#),
        (head + ["a=fingerprint:sha-256 AB:CD:G1"], 5, #"fingerprint "AB:CD:G1" is not colon-separated hex bytes"#),
        (head + ["a=fingerprint:sha-256 ABC:D1"], 5, #"fingerprint "ABC:D1" is not colon-separated hex bytes"#),
        (head + ["a=fingerprint:sha-256 AB::CD"], 5, #"fingerprint "AB::CD" is not colon-separated hex bytes"#),
        (head + ["a=fingerprint:AB:CD"], 5, #"fingerprint "AB:CD" is not "<hash function> <hex bytes>""#),
        (head + ["a=setup:both"], 5, #"setup "both" is not actpass, active, passive or holdconn"#),
        (head + ["a=sctp-port:99999"], 5, #"sctp-port "99999" is not a port number"#),
        (head + ["a=max-message-size:big"], 5, #"max-message-size "big" is not a number"#),
        (head + ["a=mid:"], 5, "a=mid needs a value"),
        (head + ["a=ice-ufrag"], 5, "a=ice-ufrag needs a value"),
    ] as [([String], Int, String)])
    func reportsLineAndMessage(lines: [String], line: Int, message: String) throws {
        let error = try #require(parseError(lines))
        #expect(error.line == line)
        #expect(error.message == message)
        #expect(error.description == "SDP line \(line): \(message)")
    }

    @Test func emptyInput() {
        for text in ["", "\r\n", "\n\n  \n"] {
            #expect(throws: SDPError(line: 1, message: "empty session description")) {
                try SessionDescription(parsing: text)
            }
        }
    }

    @Test func lineNumbersCountBareLineFeedsToo() {
        let text = "v=0\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\nt=0 0\nm=video 9 RTP/AVP 96\na=rtpmap:96 VP8/x\n"
        #expect(throws: SDPError(line: 6, message: #"rtpmap clock rate "x" is not a number"#)) {
            try SessionDescription(parsing: text)
        }
    }

    @Test func hugeValuesAreShortenedInMessages() throws {
        let long = String(repeating: "Z", count: 500)
        let error = try #require(parseError(Self.head + ["a=setup:\(long)"]))
        #expect(error.message.count < 150)
        #expect(error.message.hasPrefix("setup \"ZZZZ"))
    }

    @Test func unknownAttributesAreNotValidated() throws {
        let sdp = try SessionDescription(parsing: Fixtures.crlf(Self.head + ["a=x-anything::: \t weird", "a=rtpmapx:999"]))
        #expect(sdp.attributes.count == 2)
    }
}
