import SwiftRTC

/// `swiftrtc publish --simulcast [--layers 1,2,4]`: the layers as sendEncodings, and what the
/// server took of them.
enum SimulcastOption {
    /// "1,2,4": each layer's divisor of the capture size; 2 to 4 different ones, each 1…16.
    static func parseLayers(_ text: String) -> [Double]? {
        let values = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard (2...RtpSendParameters.maxLayers).contains(values.count) else { return nil }
        let divisors = values.compactMap { $0 }
        guard divisors.count == values.count, divisors.allSatisfy({ (1...16).contains($0) }),
              Set(divisors).count == divisors.count else { return nil }
        return divisors
    }

    /// Smallest first (as browsers list them), named by size: h, m, l (f, h, m, l for four).
    static func encodings(_ divisors: [Double]) -> [RtpEncodingParameters] {
        let names = divisors.count == 4 ? ["f", "h", "m", "l"] : divisors.count == 3 ? ["h", "m", "l"] : ["h", "l"]
        let largestFirst = divisors.sorted()
        return zip(names, largestFirst).reversed().map { name, divisor in
            RtpEncodingParameters(rid: name, scaleResolutionDownBy: divisor == 1 ? nil : divisor)
        }
    }

    /// One line: the layers the server took, with their sizes, or that it took none.
    static func describe(_ sender: RtpSender, width: Int, height: Int) -> String {
        let encodings = sender.parameters.encodings
        let taken = sender.simulcastRIDs
        func size(_ e: RtpEncodingParameters) -> String {
            let d = e.scaleResolutionDownBy ?? 1
            return "\(Int(Double(width) / d) & ~1)x\(Int(Double(height) / d) & ~1)"
        }
        guard !taken.isEmpty else {
            let e = encodings.indices.contains(sender.encodingIndex) ? encodings[sender.encodingIndex] : RtpEncodingParameters()
            return "the server did not take simulcast (no a=simulcast in its answer): sending one layer, \(size(e))"
        }
        let layers = encodings.filter { $0.rid.map(taken.contains) ?? false }.map { "\($0.rid ?? "") \(size($0))" }
        return "simulcast, \(layers.count) layers: " + layers.joined(separator: ", ")
    }

    /// Each layer's outbound-rtp, for --stats-json.
    static func json(_ report: StatsReport) -> [[String: Any]] {
        report.ofType("outbound-rtp").filter { $0["kind"] == .string("video") }.map { s in
            var layer: [String: Any] = [
                "ssrc": s.int("ssrc") ?? 0, "framesEncoded": s.int("framesEncoded") ?? 0,
                "frameWidth": s.int("frameWidth") ?? 0, "frameHeight": s.int("frameHeight") ?? 0,
                "bytesSent": s.int("bytesSent") ?? 0, "targetBitrate": s.int("targetBitrate") ?? 0,
            ]
            if let rid = s.string("rid") { layer["rid"] = rid }
            return layer
        }
    }
}
