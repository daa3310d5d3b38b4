import SeededRandom
import Testing
@testable import SDP

@Suite("Mutated input never traps")
struct FuzzTests {
    static let seeds = [Fixtures.chromiumOffer, Fixtures.srsAnswer, Fixtures.aiortcOffer, Fixtures.dataChannelOffer]

    /// Parses `bytes`: a failure must carry a line number inside the input; a success must come
    /// back unchanged through serialize → parse (the same contract `fuzzSDP` traps on).
    func check(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            let parsed = try SessionDescription(parsing: text)
            let written = parsed.serialize()
            #expect(try SessionDescription(parsing: written) == parsed, "\(written)")
        } catch {
            let lineCount = text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false).count
            #expect(error.line >= 1 && error.line <= lineCount + 1, "\(error)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test func truncationsOfEveryFixture() {
        for seed in Self.seeds {
            let bytes = Array(seed.utf8)
            // Every cut near a line end (where most edge cases are), and every 3rd byte elsewhere.
            var cuts = Set(stride(from: 0, through: bytes.count, by: 3))
            for (index, byte) in bytes.enumerated() where byte == 0x0A {
                for delta in -3...2 { cuts.insert(min(max(index + delta, 0), bytes.count)) }
            }
            for length in cuts.sorted() { check(Array(bytes[0..<length])) }
        }
    }

    @Test func fuzzEntryAcceptsAnything() {
        var rng = SplitMix64(seed: 99)
        for seed in Self.seeds {
            fuzzSDP(Array(seed.utf8))
            var bytes = Array(seed.utf8)
            for _ in 0..<50 {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                fuzzSDP(bytes)
            }
        }
        fuzzSDP([])
        fuzzSDP([0xFF, 0xFE, 0x0A])
    }

    @Test func randomByteMutations() {
        var rng = SplitMix64(seed: 0x5D9)
        let interesting: [[UInt8]] = [
            [0x0A], [0x0D], [0x0D, 0x0A], [0x20], [0x3A], [0x3D], [0x2F], [0x2A], [0x00], [0xFF], [0xC3],
            Array("a=".utf8), Array("m=".utf8), Array("999999999999999999999".utf8), Array("-1".utf8),
            Array("\r\nm=audio 9 RTP/AVP 0\r\n".utf8), Array("\na=rtpmap:".utf8), Array("é✓".utf8),
        ]
        for _ in 0..<3000 {
            var bytes = Array(Self.seeds.randomElement(using: &rng)!.utf8)
            let edits = Int.random(in: 1...6, using: &rng)
            for _ in 0..<edits where !bytes.isEmpty {
                let position = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: position)
                case 2: bytes.insert(contentsOf: interesting.randomElement(using: &rng)!, at: position)
                case 3: bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...40, using: &rng)))
                default: bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &rng)
                }
            }
            check(bytes)
        }
    }

    @Test func randomLineShuffles() {
        var rng = SplitMix64(seed: 42)
        let lineSets = [Fixtures.chromiumOfferLines, Fixtures.srsAnswerLines, Fixtures.aiortcOfferLines]
        for _ in 0..<1500 {
            var lines = lineSets.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = Int.random(in: 0..<lines.count, using: &rng)
                let j = Int.random(in: 0..<lines.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: lines.swapAt(i, j)
                case 1: lines.insert(lines[i], at: j)
                case 2: if lines.count > 1 { lines.remove(at: i) }
                default:
                    // Keep the line's type but splice in another line's value.
                    let value = lines[j].drop { $0 != "=" }.dropFirst()
                    lines[i] = String(lines[i].prefix(2)) + value
                }
            }
            check(Array(Fixtures.crlf(lines).utf8))
        }
    }

    @Test func randomBytesAndTinyInputs() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let count = Int.random(in: 0...64, using: &rng)
            let alphabet = Array("vosiuepcbtrzkam= :/\r\n0123456789ABab*-".utf8)
            check((0..<count).map { _ in alphabet.randomElement(using: &rng)! })
        }
        for _ in 0..<500 {
            check((0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
    }

    @Test func oddButValidShapesRoundTrip() {
        let cases = [
            "v=0\no=a  b   1 c d e\ns=\nt=0 0\n",
            "v=0\no=- 1 1 IN IP4 x\ns=\r\r\nt=0 0\n",
            "v=0\no=- 1 1 IN IP4 x\ns=a\rb\nt=0 0\na=x: \u{301}y\n",
            "v=0\no=- 1 1 IN IP4 x\ns=-\nt=0 0\nm=audio 9 P\u{301} \u{301} x \n",
            "v=0\no=- 1 1 IN IP4 x\ns=-\nt=0 0\nm=a 0 p\na=rtcp-fb:* x  y z\na=extmap:1   u  \n",
            "v=0\no=- 1 1 IN IP4 x\ns=-\nt=0 0\na=fmtp:abc\na=fmtp:1\n",
        ]
        for text in cases {
            let sdp = try? SessionDescription(parsing: text)
            #expect(sdp != nil, "\(text)")
            fuzzSDP(Array(text.utf8))
        }
    }
}
