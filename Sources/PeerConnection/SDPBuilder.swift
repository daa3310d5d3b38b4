import SCTP
import SDP

/// Writes the SDP we send. Kept as text building (one line per call) because the order of
/// lines is what peers are picky about, and it mirrors what browsers emit.
struct SDPWriter {
    private(set) var lines: [String] = []
    mutating func add(_ line: String) { lines.append(line) }
    var text: String { lines.joined(separator: "\r\n") + "\r\n" }
}

/// Everything one m-line of ours says.
struct LocalMediaSection {
    var kind: String                       // audio / video / application
    var mid: String
    var rejected: Bool
    var proto: String
    var direction: TransceiverDirection
    var codecs: [RtpCodecParameters]
    var extensions: [(id: Int, uri: String)]
    var sender: RtpSender?
    var rawFormats: [String] = []          // for rejected sections: echo the offered formats
    var rids: [RID] = []                   // simulcast we receive (RFC 8851/8853)
    var simulcast: Simulcast?
}

struct LocalSessionParameters {
    var sessionID: UInt64
    var sessionVersion: UInt64
    var ufrag: String
    var pwd: String
    var fingerprint: (algorithm: String, value: String)
    var setup: String                      // actpass / active / passive
    var iceLite: Bool
    var candidates: [String]               // "candidate:…" values
    var gatheringComplete: Bool
    var trickle: Bool
}

func writeSDP(_ session: LocalSessionParameters, sections: [LocalMediaSection], bundle: Bool) -> String {
    var w = SDPWriter()
    w.add("v=0")
    w.add("o=- \(session.sessionID) \(session.sessionVersion) IN IP4 127.0.0.1")
    w.add("s=-")
    w.add("t=0 0")
    if session.iceLite { w.add("a=ice-lite") }
    let bundled = sections.filter { !$0.rejected }.map(\.mid)
    if bundle && !bundled.isEmpty { w.add("a=group:BUNDLE " + bundled.joined(separator: " ")) }
    w.add("a=extmap-allow-mixed")
    w.add("a=msid-semantic: WMS *")
    for section in sections {
        if section.rejected {
            let formats = section.rawFormats.isEmpty ? ["0"] : section.rawFormats
            w.add("m=\(section.kind) 0 \(section.proto) " + formats.joined(separator: " "))
            w.add("c=IN IP4 0.0.0.0")
            w.add("a=mid:\(section.mid)")
            w.add("a=inactive")
            continue
        }
        let formats = section.kind == "application" ? ["webrtc-datachannel"] : section.codecs.map { String($0.payloadType) }
        w.add("m=\(section.kind) 9 \(section.proto) " + formats.joined(separator: " "))
        w.add("c=IN IP4 0.0.0.0")
        if section.kind != "application" { w.add("a=rtcp:9 IN IP4 0.0.0.0") }
        for candidate in session.candidates { w.add("a=\(candidate)") }
        if session.gatheringComplete { w.add("a=end-of-candidates") }
        w.add("a=ice-ufrag:\(session.ufrag)")
        w.add("a=ice-pwd:\(session.pwd)")
        if session.trickle { w.add("a=ice-options:trickle") }
        w.add("a=fingerprint:\(session.fingerprint.algorithm) \(session.fingerprint.value)")
        w.add("a=setup:\(session.setup)")
        w.add("a=mid:\(section.mid)")
        if section.kind == "application" {
            w.add("a=sctp-port:5000")
            w.add("a=max-message-size:\(DataChannelTransport.localMaxMessageSize)")
            continue
        }
        for ext in section.extensions { w.add("a=extmap:\(ext.id) \(ext.uri)") }
        w.add("a=\(section.direction.rawValue)")
        if let sender = section.sender, section.direction.sends {
            let stream = sender.streamIds.first ?? "-"
            w.add("a=msid:\(stream) \(sender.trackId)")
        }
        w.add("a=rtcp-mux")
        if section.kind == "video" { w.add("a=rtcp-rsize") }
        for codec in section.codecs {
            let name = String(codec.mimeType.split(separator: "/").last ?? "")
            let channels = codec.channels.map { "/\($0)" } ?? ""
            w.add("a=rtpmap:\(codec.payloadType) \(name)/\(codec.clockRate)\(channels)")
            for fb in codec.rtcpFeedback {
                w.add("a=rtcp-fb:\(codec.payloadType) \(fb.type)" + (fb.parameter.map { " \($0)" } ?? ""))
            }
            if let fmtp = codec.sdpFmtpLine, !fmtp.isEmpty { w.add("a=fmtp:\(codec.payloadType) \(fmtp)") }
        }
        for rid in section.rids { w.add("a=rid:\(rid.attributeValue)") }
        if let simulcast = section.simulcast { w.add("a=simulcast:\(simulcast.attributeValue)") }
        if let sender = section.sender, section.direction.sends {
            let msid = "\(sender.streamIds.first ?? "-") \(sender.trackId)"
            let rtx = section.codecs.contains { RTXCodec.isRTX($0.mimeType) } ? sender.rtxSSRC : nil
            if let rtx { w.add("a=ssrc-group:FID \(sender.ssrc) \(rtx)") }
            for ssrc in [sender.ssrc] + (rtx.map { [$0] } ?? []) {
                w.add("a=ssrc:\(ssrc) cname:\(sender.cname)")
                w.add("a=ssrc:\(ssrc) msid:\(msid)")
            }
        }
    }
    return w.text
}
